"""Recovery of a run whose process died: close its open tool calls honestly."""

from __future__ import annotations

from typing import TYPE_CHECKING

from server.events import ActionEvent, ObservationEvent, parse_event
from server.store import EventQuery, Store

if TYPE_CHECKING:
    from server.runtime.conversation import ConversationHost

INTERRUPTED = "The tool call was interrupted before it returned a result (the server running it stopped)."


async def close_interrupted_calls(store: Store, host: ConversationHost) -> int:
    """Emit a ``failed`` observation for every call of the conversation's own stream that has no
    result: it may have run, and nobody saw it end. Returns how many were closed."""
    query = EventQuery(root_id=host.root_id, conversation_ids=[host.conversation_id],
                       kinds=["ActionEvent", "ObservationEvent"])
    open_calls: dict[str, ActionEvent] = {}
    page_id = None
    while True:
        page = await store.search(query, limit=100, page_id=page_id)
        for record in page.items:
            event = parse_event(record.json)
            if isinstance(event, ActionEvent):
                open_calls[event.tool_call_id] = event
            elif isinstance(event, ObservationEvent):
                open_calls.pop(event.tool_call_id, None)
        page_id = page.next_page_id
        if page_id is None:
            break
    for call in open_calls.values():
        await host.emit(
            ObservationEvent(
                tool_name=call.tool_name, tool_call_id=call.tool_call_id,
                content=INTERRUPTED, is_error=True, status="failed",
            )
        )
    return len(open_calls)
