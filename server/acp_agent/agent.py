"""The ``agent-client-protocol`` ``Agent`` that serves taskwire conversations to an editor.

A session is a root conversation: ``session/new`` creates one (the default agent, or the agent
spec in ``_meta.taskwire.agent``; ``cwd`` becomes its workspace through ``Runtime.create``'s
rules), ``session/load`` replays its stored stream as updates and then answers,
``session/prompt`` runs a turn, ``session/cancel`` interrupts it, ``session/list`` lists
conversations. There are no modes and no authentication methods (an attached server's key is
given on the command line).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import posixpath
from typing import Any, Awaitable, Callable, TypeVar

from acp import PROTOCOL_VERSION, RequestError
from acp.connection import StreamDirection, StreamEvent
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    EmbeddedResourceContentBlock,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    TextContentBlock,
    TextResourceContents,
)

from .. import __version__
from ..acp.child_session_projection import ChildSessionProjection
from ..acp.projection import ACPProjection
from .base import ConversationInfo, Conversations
from .session import AgentSession
from ..errors import BadRequest, Conflict, NotFound, TaskwireError, Unauthorized

log = logging.getLogger(__name__)

Handler = TypeVar("Handler", bound=Callable[..., Awaitable[Any]])


def request_error(exc: TaskwireError) -> RequestError:
    """A taskwire error as the JSON-RPC error of the request that met it; ``data.code`` keeps
    taskwire's own code."""
    data = {"code": exc.code}
    if isinstance(exc, NotFound):
        return RequestError(-32002, exc.detail, data)
    if isinstance(exc, (BadRequest, Conflict)):
        return RequestError(-32602, exc.detail, data)
    if isinstance(exc, Unauthorized):
        return RequestError(-32000, exc.detail, data)
    return RequestError(-32603, exc.detail, data)


def translated(handler: Handler) -> Handler:
    """Answer a ``TaskwireError`` with its JSON-RPC error instead of an internal error."""

    @functools.wraps(handler)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await handler(*args, **kwargs)
        except TaskwireError as exc:
            raise request_error(exc) from exc

    return wrapper  # type: ignore[return-value]


class TaskwireAgent:
    """Implements ``acp.Agent``; one per client connection."""

    def __init__(
        self, conversations: Conversations, *, default_agent: dict[str, Any] | None = None, context_window: int | None = None
    ) -> None:
        self.conversations = conversations
        self.default_agent = default_agent
        self.context_window = context_window
        self._client: Client | None = None
        self._sessions: dict[str, AgentSession] = {}
        self.subagent_sessions = False
        """The editor declared ``clientCapabilities.subagents``: sub-agents are child sessions."""
        self._loads: dict[Any, str] = {}
        """``session/load`` requests in flight: JSON-RPC id -> session id."""
        self._background: set[asyncio.Task[None]] = set()

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    def observe(self, event: StreamEvent) -> None:
        """The connection's raw frames (an observer of ``acp``'s ``Connection``). The SDK's
        typed ``initialize`` drops ``clientCapabilities.subagents``, so it is read here, before
        the request is handled; a ``session/load``'s answer, once written, is the moment to
        send its children's current states."""
        message = event.message
        if event.direction is StreamDirection.INCOMING:
            params = message.get("params") if isinstance(message.get("params"), dict) else {}
            if message.get("method") == "initialize":
                capabilities = params.get("clientCapabilities")
                self.subagent_sessions = isinstance(capabilities, dict) and isinstance(capabilities.get("subagents"), dict)
            elif message.get("method") == "session/load" and "id" in message:
                self._loads[message["id"]] = params.get("sessionId")
        elif "method" not in message and message.get("id") in self._loads:
            session = self._sessions.get(self._loads.pop(message["id"]) or "")
            if session is not None and "result" in message:
                task = asyncio.create_task(session.publish_states(), name=f"acp states {session.id}")
                self._background.add(task)
                task.add_done_callback(self._background.discard)

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kwargs: Any
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(name="taskwire", title="taskwire", version=__version__),
            auth_methods=[],
        )

    @translated
    async def new_session(self, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        _check_cwd(cwd)
        if mcp_servers:
            log.info("session/new: %d MCP server(s) offered; taskwire agents do not take MCP servers", len(mcp_servers))
        agent = _requested_agent(kwargs.get("taskwire"), self.default_agent)
        info = await self.conversations.create(agent, cwd)
        self._open(info).start(info.last_seq)
        return NewSessionResponse(session_id=info.id)

    @translated
    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None, additional_directories: Any = None, **kwargs: Any) -> LoadSessionResponse:
        info = await self.conversations.info(session_id)
        if not info.is_root:
            raise BadRequest(f"{session_id!r} is a sub-agent; load its root conversation", code="subagent_conversation")
        previous = self._sessions.pop(session_id, None)
        if previous is not None:
            await previous.close()
        session = self._open(info)
        session.start(await session.replay())
        return LoadSessionResponse()

    @translated
    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any) -> ListSessionsResponse:
        infos, next_cursor = await self.conversations.list(cursor)
        sessions = [
            SessionInfo(session_id=i.id, cwd=i.workspace or "/", title=i.title, updated_at=i.updated_at)
            for i in infos
            if cwd is None or i.workspace == cwd
        ]
        return ListSessionsResponse(sessions=sessions, next_cursor=next_cursor)

    @translated
    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        owner = self._owner_of(session_id) if session_id not in self._sessions else None
        if owner is not None:
            # A prompt on a child session: a person writing to that sub-agent while it works.
            return await owner.steer_child(session_id, prompt_text(prompt))
        if session_id not in self._sessions and not (await self.conversations.info(session_id)).is_root:
            raise BadRequest(f"{session_id!r} is a sub-agent's child session; prompt its root session",
                             code="subagent_conversation")
        return await self._session(session_id).prompt(prompt_text(prompt))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            await session.cancel()
            return
        owner = self._owner_of(session_id)
        if owner is None:
            log.warning("session/cancel of %r, which is no session or child session of this connection", session_id)
            return
        await owner.cancel_child(session_id)

    async def close(self) -> None:
        """Stop every session's feed."""
        for task in list(self._background):
            task.cancel()
        for session in list(self._sessions.values()):
            await session.close()
        self._sessions.clear()

    def _open(self, info: ConversationInfo) -> AgentSession:
        if self._client is None:
            raise RuntimeError("the agent is not connected")
        projection = ACPProjection(workspace=info.workspace, context_window=self.context_window)
        children = (ChildSessionProjection(info.id, workspace=info.workspace, hold_launches=self.conversations.forwarding)
                    if self.subagent_sessions else None)
        session = self._sessions[info.id] = AgentSession(info.id, self.conversations, self._client, projection, children)
        return session

    def _owner_of(self, child_id: str) -> AgentSession | None:
        """The session whose tree announced ``child_id`` as a child session."""
        return next((s for s in self._sessions.values() if s.children is not None and s.children.child(child_id)), None)

    def _session(self, session_id: str) -> AgentSession:
        session = self._sessions.get(session_id)
        if session is None:
            raise NotFound(f"no session {session_id!r} on this connection; open it with session/new or session/load",
                           code="unknown_session")
        return session


def prompt_text(blocks: list[Any]) -> str:
    """A prompt's content as the one text message taskwire agents take: text as it is, a
    resource link as its URI, an embedded text resource inline under its URI."""
    parts = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"[{block.name}]({block.uri})")
        elif isinstance(block, EmbeddedResourceContentBlock) and isinstance(block.resource, TextResourceContents):
            parts.append(f"{block.resource.uri}:\n```\n{block.resource.text}\n```")
        else:
            kind = getattr(block, "type", type(block).__name__)
            raise BadRequest(f"taskwire agents take text; this prompt holds a {kind!r} block", code="unsupported_content")
    text = "\n\n".join(part for part in parts if part)
    if not text.strip():
        raise BadRequest("the prompt holds no text", code="empty_prompt")
    return text


def _check_cwd(cwd: str) -> None:
    if not posixpath.isabs(cwd):
        raise BadRequest(f"cwd must be an absolute path, not {cwd!r}", code="invalid_cwd")


def _requested_agent(meta: Any, default: dict[str, Any] | None) -> dict[str, Any] | None:
    """``_meta.taskwire.agent``: an agent spec as ``POST /api/conversations`` takes it."""
    if meta is None:
        return default
    if not isinstance(meta, dict):
        raise BadRequest("_meta.taskwire must be an object", code="invalid_meta")
    agent = meta.get("agent", default)
    if agent is not None and not isinstance(agent, dict):
        raise BadRequest("_meta.taskwire.agent must be an agent spec object, e.g. {\"kind\": \"native\"}", code="invalid_meta")
    return agent
