"""Agent backends and the factory that builds one for a conversation's ``agent`` spec."""

from __future__ import annotations

import asyncio
import importlib
from types import ModuleType
from typing import TYPE_CHECKING

from ...errors import BackendError
from ...events import parse_event
from ...llm import make_llm
from .base import AgentBackend, AgentHost
from .native import NativeBackend
from ..budgets import native_model
from ..history import messages_from_events
from ..requests_first import RequestsFirst
from ...specs import DEFAULT_SYSTEM_PROMPT, DEFAULT_TOOLS
from ...store import EventQuery, Store

if TYPE_CHECKING:
    from ...hooks import Hooks
    from ...llm import ModelHTTP, ProviderGates
    from ..conversation import ConversationHost
    from ..task_manager import TaskManager
    from .openhands_process import OpenHandsProcess

__all__ = ["AgentBackend", "AgentHost", "build_backend"]


async def build_backend(
    host: ConversationHost, store: Store, tasks: TaskManager, hooks: Hooks, requests_first: RequestsFirst | None = None,
    llm_http: ModelHTTP | None = None, llm_gates: ProviderGates | None = None,
    openhands_process: OpenHandsProcess | None = None,
) -> AgentBackend:
    """The backend named by ``host.record.agent``, primed with what the conversation already
    holds; a native agent's steps give way to the API's requests (``requests_first``), and its
    model calls go through the server's one client (``llm_http``) and share the server's
    rate limits per provider (``llm_gates``); an OpenHands agent runs in the server's one
    OpenHands process (``openhands_process``)."""
    agent = host.record.agent
    kind = agent.get("kind", "native")
    if kind == "native":
        return await _native(host, store, tasks, hooks, requests_first, llm_http, llm_gates)
    if kind == "acp":
        acp = await _imported(f"{__name__}.acp")
        return acp.ACPBackend.from_spec(agent, host)
    if kind == "claude_sdk":
        claude_sdk = await _imported(f"{__name__}.claude_sdk")
        return await claude_sdk.ClaudeSDKBackend.from_spec(agent, host)
    if kind == "openhands":
        openhands = await _imported(f"{__name__}.openhands")
        return openhands.OpenHandsBackend.from_spec(agent, host, openhands_process)
    raise BackendError(f"unknown agent kind {kind!r}", code="bad_agent")


_MODULES: dict[str, ModuleType] = {}
"""Peer backend modules imported whole (process-wide, as ``sys.modules`` is)."""
_IMPORTING: dict[str, asyncio.Future[ModuleType]] = {}
"""An import under way, which conversations starting meanwhile wait for."""


async def _imported(name: str) -> ModuleType:
    """A peer backend's module, imported off the event loop the first time: importing
    ``claude_agent_sdk`` (and the MCP library beneath it) takes seconds, which would stall every
    conversation's stream on the server. Conversations starting meanwhile wait for that one
    import (``sys.modules`` holds a module before it is whole, so it is no test)."""
    module = _MODULES.get(name)
    if module is not None:
        return module
    importing = _IMPORTING.get(name)
    if importing is None or importing.get_loop() is not asyncio.get_running_loop() or importing.done():
        importing = _IMPORTING[name] = asyncio.ensure_future(asyncio.to_thread(importlib.import_module, name))
    module = await asyncio.shield(importing)  # a cancelled caller leaves the import to the others
    _MODULES[name] = module
    return module


async def _native(
    host: ConversationHost, store: Store, tasks: TaskManager, hooks: Hooks, requests_first: RequestsFirst | None,
    llm_http: ModelHTTP | None, llm_gates: ProviderGates | None,
) -> NativeBackend:
    agent = host.record.agent
    llm_config = {k: v for k, v in (agent.get("llm") or {}).items() if v is not None}
    llm = make_llm(llm_config, host.settings, llm_http, llm_gates)
    tool_names = agent.get("tools") or DEFAULT_TOOLS
    # Resume from the stream: it already holds every user message delivered so far. A new
    # stream (a sub-agent spawned now, a root just created) its host has all of: not read back.
    events = host.known_history()
    history = messages_from_events(events if events is not None else await own_events(store, host))
    host.take_user_messages()
    return NativeBackend(
        llm=llm,
        model=llm_config.get("model") or host.settings.llm_model,
        tools=[hooks.tools[name]() for name in tool_names if name in hooks.tools],
        system_prompt=agent.get("system_prompt") or DEFAULT_SYSTEM_PROMPT,
        max_iterations=agent.get("max_iterations") or 50,
        tasks=tasks,
        history=history,
        approval=host.approval,
        requests_first=requests_first,
        provider=native_model(agent, host.settings)[1],
    )


async def own_events(store: Store, host: ConversationHost) -> list:
    """Every event of the conversation's own stream, in order."""
    query = EventQuery(root_id=host.root_id, conversation_ids=[host.conversation_id])
    events, page_id = [], None
    while True:
        page = await store.search(query, limit=100, page_id=page_id)
        events.extend(parse_event(r.json) for r in page.items)
        if page.next_page_id is None:
            return events
        page_id = page.next_page_id
