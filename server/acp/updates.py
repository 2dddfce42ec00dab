"""What the ACP projection hands out, and the shapes of the ``session/update`` objects it builds.

No I/O. Updates are plain dicts in wire form; ``server/acp_agent`` validates them against the
``agent-client-protocol`` models as it sends them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union


@dataclass(frozen=True, slots=True)
class Update:
    """One ``session/update`` ``update`` object, in wire form (camelCase, ``sessionUpdate``)."""

    payload: dict[str, Any]
    session_id: str | None = None
    """The ACP session it goes on: ``None`` for the root's, else a child session's id (the
    sub-agent's conversation id; ``server/acp/child_session_projection.py``)."""
    raw: bool = False
    """A variant the Python SDK's models lack (``subagent_update``, ``session_message``): sent
    as it is, unvalidated."""


@dataclass(frozen=True, slots=True)
class RunEnded:
    """The root's run ended: every update it produced was handed out before this."""

    seq: int
    status: str
    """``finished``, ``error`` or ``paused``."""
    error: str | None = None
    """The reason of an ``error`` end (the run's last ``AgentErrorEvent``)."""
    code: str | None = None
    reason: str | None = None
    """Why a ``paused`` end came, when neither a person nor the run chose it (its status event's
    ``reason``: a budget passed, ``max_tokens budget passed: ...``)."""


@dataclass(frozen=True, slots=True)
class Ask:
    """Ask the editor: the params of one ``session/request_permission`` (minus ``sessionId``)."""

    request_id: str
    tool_call: dict[str, Any]
    """The ``toolCall`` object (a ``ToolCallUpdate``), in wire form."""
    options: list[dict[str, Any]]
    """ACP ``PermissionOption``s in wire form (empty while ``needs_details``)."""
    needs_details: bool = False
    """The request event was not in this feed (forwarding off): read its options first."""
    session_id: str | None = None
    """The session the request goes on: ``None`` for the root's, else the asking child's."""


@dataclass(frozen=True, slots=True)
class Settled:
    """The request no longer waits: an editor's dialog for it is not needed any more."""

    request_id: str


Output = Union[Update, RunEnded, Ask, Settled]


def stamp_meta(event: dict[str, Any]) -> dict[str, Any]:
    """The ``_meta`` stamp of a sub-agent's event (``claudeCode.parentToolUseId``, the
    convention existing clients nest by, and ``taskwire.subagentId``); ``{}`` for a main-agent
    event."""
    parent = event.get("parent_tool_use_id")
    if not parent:
        return {}
    meta: dict[str, Any] = {"claudeCode": {"parentToolUseId": parent}}
    if event.get("subagent_id"):
        meta["taskwire"] = {"subagentId": event["subagent_id"]}
    return meta


def merge_meta(*metas: dict[str, Any]) -> dict[str, Any]:
    """``_meta`` objects merged one level down (``claudeCode``, ``taskwire`` keep every key)."""
    merged: dict[str, Any] = {}
    for meta in metas:
        for key, value in meta.items():
            both = isinstance(value, dict) and isinstance(merged.get(key), dict)
            merged[key] = {**merged[key], **value} if both else value
    return merged


def wire_status(status: str) -> str:
    """A taskwire tool-call status on the ACP v1 wire, which has no ``cancelled``."""
    return "failed" if status == "cancelled" else status


def with_meta(payload: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with ``_meta`` set, unless there is none."""
    if meta:
        payload["_meta"] = meta
    return payload


def text_chunk(kind: str, text: str, meta: dict[str, Any]) -> Update:
    """An ``agent_message_chunk`` / ``agent_thought_chunk`` / ``user_message_chunk`` of text."""
    return Update(with_meta({"sessionUpdate": kind, "content": {"type": "text", "text": text}}, meta))
