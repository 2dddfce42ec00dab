"""Helpers for the ACP bridge's tests: ACP payload builders and assertions in the domain's words."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

from taskwire.acp.child_sessions import ChildSessions
from taskwire.acp.mapping import Action, Emit, SessionMapper
from taskwire.events import ACPToolCallEvent, Event
from tests.api.helpers import all_events
from tests.servers import RunningServer

HERE = Path(__file__).resolve().parent
FAKE_AGENT = HERE / "fake_agent.py"
FIXTURE = HERE / "fixtures" / "two_subagents.acp.jsonl"


# -- ACP session/update payloads ------------------------------------------------------------


def _meta(parent: str | None, tool_name: str | None = None) -> dict[str, Any]:
    claude: dict[str, Any] = {}
    if tool_name:
        claude["toolName"] = tool_name
    if parent:
        claude["parentToolUseId"] = parent
    return {"_meta": {"claudeCode": claude}} if claude else {}


def tool_call(call_id: str, title: str = "run", *, parent: str | None = None, **fields: Any) -> dict[str, Any]:
    fields.setdefault("status", "pending")
    return {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": title, **_meta(parent), **fields}


def update(call_id: str, *, parent: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call_update", "toolCallId": call_id, **_meta(parent), **fields}


def chunk(text: str, *, parent: str | None = None, thought: bool = False) -> dict[str, Any]:
    kind = "agent_thought_chunk" if thought else "agent_message_chunk"
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}, **_meta(parent)}


def agent_call(call_id: str, name: str) -> list[dict[str, Any]]:
    """Claude Code's Agent call as claude-agent-acp announces it: a generic ``Task`` first,
    then its input."""
    start = {**tool_call(call_id, "Task", kind="think", rawInput={}), **_meta(None, "Agent")}
    described = update(
        call_id, title=f"Echo {name}",
        rawInput={"description": f"Echo {name}", "prompt": f"run echo {name}", "subagent_type": "general-purpose"},
    )
    return [start, described]


def feed(mapper: SessionMapper, *updates: dict[str, Any]) -> list[Action]:
    return [action for u in updates for action in mapper.receive_update(u)]


def emitted(actions: Iterable[Action]) -> list[Event]:
    return [a.event for a in actions if isinstance(a, Emit)]


def tool_events(actions: Iterable[Action]) -> list[ACPToolCallEvent]:
    return [e for e in emitted(actions) if isinstance(e, ACPToolCallEvent)]


def replay(path: Path = FIXTURE) -> tuple[list[Action], SessionMapper]:
    """Feed a recorded ACP transcript (``{"dir", "msg"}`` lines) through a mapper, in wire order."""
    mapper = SessionMapper()
    mapper.begin_turn()
    actions: list[Action] = []
    for message, result in _agent_messages(path):
        if message.get("method") == "session/update":
            actions += mapper.receive_update(message["params"]["update"])
        elif message.get("method") == "session/request_permission":
            actions += mapper.receive_permission_request(message["params"])
        elif "stopReason" in result:
            actions += mapper.end_turn().actions
    return actions, mapper


def _agent_messages(path: Path) -> Iterable[tuple[dict[str, Any], dict[str, Any]]]:
    """What the agent sent in a recorded transcript, each with its ``result`` (``{}`` if none)."""
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if entry["dir"] == "agent->client":
            result = entry["msg"].get("result")
            yield entry["msg"], result if isinstance(result, dict) else {}


# -- assertions and event lists -----------------------------------------------------------


def last_per_call(events: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The documented consumer rule: the last event per ``tool_call_id`` wins."""
    calls: dict[str, dict[str, Any]] = {}
    for event in events:
        if event["kind"] == "ACPToolCallEvent":
            calls[event["tool_call_id"]] = event
    return calls


async def wait_for_event(
    server: RunningServer, conversation_id: str, found: Callable[[dict[str, Any]], bool], timeout: float = 120
) -> None:
    """Poll the conversation's tree until an event satisfies ``found``."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not any(found(e) for e in await all_events(server, conversation_id, include_subagents="true")):
        assert asyncio.get_running_loop().time() < deadline, "the event never came"
        await asyncio.sleep(0.05)


def assert_stamped(event: dict[str, Any], tool_call_id: str, subagent_id: str | None = None) -> None:
    assert event.get("parent_tool_use_id") == tool_call_id, event
    assert event.get("subagent_id"), event
    if subagent_id is not None:
        assert event["subagent_id"] == subagent_id, event


def assert_unstamped(event: dict[str, Any]) -> None:
    assert "parent_tool_use_id" not in event and "subagent_id" not in event, event


# -- the fake agent -----------------------------------------------------------------------


def fake_agent(tmp_path: Path, *flags: str, **overrides: Any) -> dict[str, Any]:
    """An ``acp`` agent spec running ``fake_agent.py``; its pids go to ``tmp_path/agent.pids``."""
    spec = {
        "kind": "acp",
        "command": sys.executable,
        "args": [str(FAKE_AGENT), *flags],
        "env": {"FAKE_AGENT_PID_FILE": str(tmp_path / "agent.pids")},
        "startup_timeout": 30,
        "idle_timeout": 60,
    }
    spec.update(overrides)
    return spec


def agent_pids(tmp_path: Path) -> list[int]:
    path = tmp_path / "agent.pids"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purposes (its parent has not reaped it yet).
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except (OSError, IndexError):
        return False


NATIVE_FIXTURE = HERE / "fixtures" / "native_two_subagents.acp.jsonl"
NATIVE_CANCEL_FIXTURE = HERE / "fixtures" / "native_cancel_child.acp.jsonl"


def replay_native(path: Path = NATIVE_FIXTURE) -> tuple[list[Action], ChildSessions]:
    """Feed a recorded transcript through ``ChildSessions`` (and its mapper), in wire order, as
    the backend does: every ``session/update``'s params, every permission request's."""
    mapper = SessionMapper()
    children = ChildSessions(mapper)
    mapper.begin_turn()
    actions: list[Action] = []
    for message, result in _agent_messages(path):
        if "sessionId" in result and "modes" in result:
            children.root_session_id = result["sessionId"]
        if message.get("method") == "session/update":
            actions += children.receive(message["params"])
        elif message.get("method") == "session/request_permission":
            actions += children.receive_permission(message["params"])
        elif "stopReason" in result:
            actions += children.end_turn()
            actions += mapper.end_turn().actions
    return actions, children
