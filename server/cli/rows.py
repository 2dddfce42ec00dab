"""One line per tool event, as ``taskwire demo`` prints them."""

from __future__ import annotations

from taskwire_client.terminal import last_line
from taskwire_client import call_title
from ..events import ACPToolCallEvent, ActionEvent, Event, ObservationEvent


def tool_row(event: Event) -> tuple[str, str, str, str] | None:
    """(tool_call_id, status, parent_tool_use_id, title) for a tool event; None for others."""
    parent = event.parent_tool_use_id or "-"
    if isinstance(event, ActionEvent):
        return event.tool_call_id, "in_progress", parent, f"{event.tool_name}: {call_title(event.arguments) or event.tool_name}"
    if isinstance(event, ObservationEvent):
        status = event.status or ("failed" if event.is_error else "completed")
        return event.tool_call_id, status, parent, f"{event.tool_name} -> {last_line(event.content, 60)}"
    if isinstance(event, ACPToolCallEvent):
        return event.tool_call_id, event.status or "-", parent, event.title or ""
    return None
