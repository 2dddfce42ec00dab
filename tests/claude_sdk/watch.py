"""Watching a claude_sdk conversation through the real server: sockets and REST, in domain words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection

from tests.api.socket_client import next_frame
from tests.servers import RunningServer

FINAL = {"finished", "error", "paused"}


def replay_agent(transcript: Path, **extra: Any) -> dict[str, Any]:
    """A claude_sdk agent that plays ``transcript`` instead of starting Claude Code."""
    return {"kind": "claude_sdk", "replay": str(transcript), **extra}


async def frames_until_run_ends(ws: ClientConnection) -> list[dict[str, Any]]:
    """Frames (after ``full_state``) up to the root's ``status`` change out of ``running``."""
    frames = []
    while True:
        frame = await next_frame(ws)
        frames.append(frame)
        if (
            frame["kind"] == "ConversationStateUpdateEvent"
            and frame.get("key") == "status"
            and "subagent_id" not in frame
            and frame.get("value") in FINAL
        ):
            return frames


async def say(server: RunningServer, conversation_id: str, content: str) -> None:
    response = await server.client.post(f"/api/conversations/{conversation_id}/events", json={"content": content})
    assert response.status_code == 202, response.text


def root_frames(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in frames if "subagent_id" not in f and "parent_tool_use_id" not in f]


def assistant_texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["content"] for e in events if e["kind"] == "MessageEvent" and e.get("role") == "assistant"]


def call_statuses(events: list[dict[str, Any]], call_id: str) -> list[str]:
    return [e["status"] for e in events if e["kind"] == "ACPToolCallEvent" and e["tool_call_id"] == call_id]


def last_call(events: list[dict[str, Any]], call_id: str) -> dict[str, Any]:
    """The call as a client keeps it: the last event per ``tool_call_id`` wins."""
    return [e for e in events if e["kind"] == "ACPToolCallEvent" and e["tool_call_id"] == call_id][-1]


def call_text(call: dict[str, Any]) -> str:
    """The text of a call's content blocks."""
    return "".join(block["content"]["text"] for block in call.get("content") or [])


def call_ids(events: list[dict[str, Any]]) -> set[str]:
    return {e["tool_call_id"] for e in events if e["kind"] == "ACPToolCallEvent"}


def assert_stamped(event: dict[str, Any], *, tool_call_id: str, subagent_id: str) -> None:
    assert (event.get("parent_tool_use_id"), event.get("subagent_id")) == (tool_call_id, subagent_id), event
