"""Recorded SDK transcripts: one JSON object a line per message the SDK yielded.

The format of ``../shared/fixtures/claude-agent-sdk/*.sdk.jsonl``: ``{"type": <the message's
class name>, "raw": <its dataclass as a dict>, ...}`` (other keys are annotations and ignored).
Content blocks lose their class in ``raw``; it is recovered from their fields. A line
``{"type": "can_use_tool", "tool_name", "input", "tool_use_id", "agent_id", "decision_reason"}``
records a permission callback Claude Code made at that point (a ``PermissionAsk``).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import claude_agent_sdk as sdk

from ..confined_files import read_confined
from ..errors import ClaudeSDKError

_MESSAGE_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        sdk.AssistantMessage, sdk.UserMessage, sdk.SystemMessage, sdk.ResultMessage, sdk.StreamEvent,
        sdk.TaskStartedMessage, sdk.TaskProgressMessage, sdk.TaskUpdatedMessage,
        sdk.TaskNotificationMessage, sdk.RateLimitEvent, sdk.HookEventMessage,
    )
}
# A block's class by its fields (asdict drops the class; the field sets are distinct).
_BLOCK_TYPES: list[tuple[frozenset[str], type]] = [
    (frozenset({"tool_use_id", "content", "is_error"}), sdk.ToolResultBlock),
    (frozenset({"id", "name", "input"}), sdk.ToolUseBlock),
    (frozenset({"thinking", "signature"}), sdk.ThinkingBlock),
    (frozenset({"text"}), sdk.TextBlock),
    (frozenset({"tool_use_id", "content"}), sdk.ServerToolResultBlock),
]


@dataclass(frozen=True, slots=True)
class PermissionAsk:
    """A ``can_use_tool`` call Claude Code made, as a transcript recorded it (never fed to the
    dispatcher: a replay calls the backend's callback with it)."""

    tool_name: str
    input: dict[str, Any]
    tool_use_id: str | None = None
    agent_id: str | None = None
    decision_reason: str | None = None


def message_from_record(record: dict[str, Any]) -> Any:
    """The SDK message a transcript line records (or a ``PermissionAsk``). Raises
    ``ClaudeSDKError`` for an unknown type."""
    if record.get("type") == "can_use_tool":
        return PermissionAsk(
            tool_name=str(record.get("tool_name") or ""), input=dict(record.get("input") or {}),
            tool_use_id=record.get("tool_use_id"), agent_id=record.get("agent_id"),
            decision_reason=record.get("decision_reason"),
        )
    cls = _MESSAGE_TYPES.get(str(record.get("type")))
    if cls is None:
        raise ClaudeSDKError(f"transcript: unknown message type {record.get('type')!r}", code="bad_transcript")
    raw = dict(record.get("raw") or {})
    if isinstance(raw.get("content"), list) and cls in (sdk.AssistantMessage, sdk.UserMessage):
        raw["content"] = [_block(b) for b in raw["content"]]
    if cls is sdk.ResultMessage and isinstance(raw.get("deferred_tool_use"), dict):
        raw["deferred_tool_use"] = sdk.DeferredToolUse(**raw["deferred_tool_use"])
    if cls is sdk.RateLimitEvent and isinstance(raw.get("rate_limit_info"), dict):
        raw["rate_limit_info"] = sdk.RateLimitInfo(**raw["rate_limit_info"])
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in raw.items() if k in names})


def record_of(message: Any) -> dict[str, Any]:
    """A transcript line for ``message`` (the inverse of ``message_from_record``)."""
    return {
        "type": type(message).__name__,
        "parent_tool_use_id": getattr(message, "parent_tool_use_id", None),
        "raw": dataclasses.asdict(message),
    }


MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024
"""The largest transcript file a request may name."""


def load_transcript(path: str | Path, roots: list[Path] | None = None) -> list[Any]:
    """Every message of a transcript file, in order. A file a request names is read only
    under ``roots`` (``taskwire.confined_files``); what is wrong with it is said by line number,
    never by quoting it. Raises ``ClaudeSDKError`` (``transcript_outside_roots``,
    ``transcript_not_found``, ``transcript_unreadable``, ``bad_transcript``)."""
    text = read_confined(
        Path(path), roots, what="transcript", limit=MAX_TRANSCRIPT_BYTES,
        hint="name a file under them",
        refuse=lambda detail, code: ClaudeSDKError(detail, code=code),
    )
    messages = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise TypeError("not an object")
            messages.append(message_from_record(record))
        except (ValueError, TypeError, KeyError, ClaudeSDKError):
            raise ClaudeSDKError(
                f"transcript {path} line {number} is not a recorded message", code="bad_transcript"
            ) from None
    return messages


def dump_transcript(messages: list[Any], path: str | Path) -> None:
    """Write ``messages`` as a transcript file."""
    lines = [json.dumps(record_of(m), default=str) for m in messages]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _block(data: Any) -> Any:
    if not isinstance(data, dict):
        return data
    keys = frozenset(data)
    for fields, cls in _BLOCK_TYPES:
        if fields <= keys:
            return cls(**{k: data[k] for k in fields})
    return data
