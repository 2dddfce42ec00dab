"""What a native agent's permission request says and offers, and what the model reads when a
call is refused."""

from __future__ import annotations

from typing import Any

from ..events import PermissionOption

NATIVE_OPTIONS = (
    PermissionOption(option_id="allow_once", kind="allow_once", name="Allow"),
    PermissionOption(option_id="allow_always", kind="allow_always", name="Always allow this tool here"),
    PermissionOption(option_id="reject_once", kind="reject_once", name="Reject"),
)
"""What a request offers when the asker names no options of its own (the native agent's);
``allow_always`` holds for that tool in the whole tree."""

TITLE_LIMIT = 200


def request_title(tool_name: str, arguments: dict[str, Any]) -> str:
    """A few words on what the call would do: its command (with its path, for an editor's),
    path, description or message; the tool's name when it has none of those."""
    words = [arguments.get(key) for key in ("command", "path")]
    parts = [value for value in words if isinstance(value, str) and value.strip()]
    if not parts:
        for key in ("description", "message", "thought"):
            value = arguments.get(key)
            if isinstance(value, str) and value.strip():
                parts = [value]
                break
    text = " ".join(" ".join(parts).split()) or tool_name
    return text if len(text) <= TITLE_LIMIT else text[: TITLE_LIMIT - 1] + "…"


def refusal_text(tool_name: str, outcome: str, reason: str | None) -> str:
    """The result a model reads for a call that was not allowed to run."""
    why = f" Reason: {reason}" if reason else ""
    if outcome == "timed_out":
        return f"Permission was not given in time for this {tool_name} call, so it did not run.{why}"
    if outcome == "cancelled":
        return f"The permission request for this {tool_name} call was cancelled, so it did not run.{why}"
    return f"The user rejected this {tool_name} call, so it did not run.{why}"
