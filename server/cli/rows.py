"""How the terminal commands (``demo``, ``watch``) read events: one-line titles of tool calls
and results, and when a conversation's run has ended."""

from __future__ import annotations

from typing import Any

RUN_ENDS = frozenset({"finished", "error", "paused"})
"""Root statuses that end a run."""


def call_title(event: dict[str, Any]) -> str:
    """What a tool call does, in a few words: its command, description or path."""
    args = event.get("arguments") or {}
    title = args.get("command") or args.get("description") or args.get("path") or args.get("message")
    return str(title) if title else ""


def last_line(text: str | None, width: int = 60) -> str:
    """The last non-empty line of a tool's output, cut to ``width``."""
    lines = (text or "").strip().splitlines()
    return lines[-1][:width] if lines else ""


def tool_row(event: dict[str, Any]) -> tuple[str, str, str, str] | None:
    """One row per tool event: (tool_call_id, status, parent_tool_use_id, title); None for others."""
    kind = event.get("kind")
    parent = event.get("parent_tool_use_id") or "-"
    if kind == "ActionEvent":
        return event["tool_call_id"], "in_progress", parent, f"{event['tool_name']}: {call_title(event) or event['tool_name']}"
    if kind == "ObservationEvent":
        return event["tool_call_id"], observation_status(event), parent, f"{event['tool_name']} -> {last_line(event.get('content'))}"
    if kind == "ACPToolCallEvent":
        return event["tool_call_id"], event.get("status") or "-", parent, event.get("title") or ""
    return None


def observation_status(event: dict[str, Any]) -> str:
    """A tool result's status; events from before ``status`` existed say it with ``is_error``."""
    return event.get("status") or ("failed" if event.get("is_error") else "completed")


def root_status(event: dict[str, Any]) -> str | None:
    """The root conversation's new status, if ``event`` is a change of it."""
    if (
        event.get("kind") == "ConversationStateUpdateEvent"
        and event.get("key") == "status"
        and "subagent_id" not in event
    ):
        return event.get("value")
    return None


def root_finished(event: dict[str, Any]) -> bool:
    """True when ``event`` says the root's run ended (finished, failed or paused)."""
    return root_status(event) in RUN_ENDS
