"""Recovery of a run whose process died: close what it left open, honestly.

Every tool call of the tree without a terminal event is closed as ``failed`` (it may have run,
and nobody saw it end), in the stream it belongs to and with its stamps; every sub-agent that
never finished gets its ``SubagentFinishedEvent`` with status ``error`` (and, if its own status
was left ``running``, ``paused``). A permission request
left waiting is resolved ``cancelled`` (``answered_by="server"``), and the call that waited on
it is closed as ``cancelled``: it never ran. A late answer to it is then a 409.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..events import (
    ACPToolCallEvent,
    ActionEvent,
    ConversationStateUpdateEvent,
    Event,
    ObservationEvent,
    PermissionRequestEvent,
    PermissionResolvedEvent,
    SubagentFinishedEvent,
    parse_event,
)
from ..events.closing import closing_status, closing_text
from ..permissions.ledger import KINDS as PERMISSION_KINDS
from ..store import EventQuery, Store

if TYPE_CHECKING:
    from .conversation import ConversationHost

REASON = "the server running it stopped"
TERMINAL = {"completed", "failed", "cancelled"}
KINDS = ["ActionEvent", "ObservationEvent", "ACPToolCallEvent", *PERMISSION_KINDS]


async def close_interrupted_calls(store: Store, root: ConversationHost, reason: str = REASON) -> int:
    """Close the tree's open calls and unfinished sub-agents, saying ``reason`` (what stopped
    them); returns how many calls were closed."""
    open_calls: dict[tuple[str, str], Event] = {}
    waiting: dict[str, tuple[str, PermissionRequestEvent]] = {}
    async for conversation_id, event in _events(store, root.root_id):
        if isinstance(event, PermissionRequestEvent):
            waiting[event.request_id] = (conversation_id, event)
        elif isinstance(event, PermissionResolvedEvent):
            waiting.pop(event.request_id, None)
        elif isinstance(event, ActionEvent):
            open_calls[(conversation_id, event.tool_call_id)] = event
        elif isinstance(event, ObservationEvent):
            open_calls.pop((conversation_id, event.tool_call_id), None)
        elif isinstance(event, ACPToolCallEvent):
            if event.status in TERMINAL:
                open_calls.pop((conversation_id, event.tool_call_id), None)
            else:
                open_calls[(conversation_id, event.tool_call_id)] = event
    unasked = set()
    for conversation_id, request in waiting.values():
        await root.emit_in(conversation_id, _cancelled(request, reason))
        unasked.add((conversation_id, request.tool_call_id))
    for key, call in open_calls.items():
        await root.emit_in(key[0], _closing(call, reason, ran=key not in unasked))
    if waiting:
        await root.permissions.publish_recovered()
    for record in await store.tree(root.root_id):
        if not record.is_root and record.status == "running":
            # Its run ended unrecorded: cut short, as ``Runtime.drive`` records it (the event
            # sets the row).
            paused = ConversationStateUpdateEvent(key="status", value="paused")
            paused.parent_tool_use_id, paused.subagent_id = record.parent_tool_use_id, record.id
            await root.emit_in(record.id, paused)
        if not record.is_root and (record.subagent_status or "running") == "running":
            finished = SubagentFinishedEvent(status="error", result=f"interrupted: {reason}", usage=record.usage)
            finished.parent_tool_use_id, finished.subagent_id = record.parent_tool_use_id, record.id
            await root.emit_in(record.id, finished)
    return len(open_calls)


async def restate_status(store: Store, root: ConversationHost) -> None:
    """Record the root's status event again when its stream's last one differs from its row:
    a database written before a status became one write (its event, which sets the row) may
    hold a row ahead of its stream."""
    if await _last_status(store, root.root_id) != root.record.status:
        await root.emit(ConversationStateUpdateEvent(key="status", value=root.record.status, reason=root.record.status_reason))


async def _last_status(store: Store, root_id: str) -> str | None:
    query = EventQuery(root_id=root_id, conversation_ids=[root_id], kinds=["ConversationStateUpdateEvent"])
    page_id = None
    while True:
        page = await store.search(query, limit=100, page_id=page_id, order="TIMESTAMP_DESC")
        for record in page.items:
            event = parse_event(record.json)
            if isinstance(event, ConversationStateUpdateEvent) and event.key == "status":
                return str(event.value)
        page_id = page.next_page_id
        if page_id is None:
            return None


def _closing(call: Event, reason: str, *, ran: bool = True) -> Event:
    text = closing_text(ran, reason)
    status = closing_status(ran)
    stamps = {"parent_tool_use_id": call.parent_tool_use_id, "subagent_id": call.subagent_id}
    if isinstance(call, ACPToolCallEvent):
        closed = call.model_copy(update={"status": status, "is_error": True, "content": [{"type": "text", "text": text}]})
        fresh = ACPToolCallEvent(**closed.model_dump(exclude={"id", "timestamp", "seq"}))
        return fresh
    assert isinstance(call, ActionEvent)
    return ObservationEvent(
        tool_name=call.tool_name, tool_call_id=call.tool_call_id, content=text, is_error=True, status=status, **stamps
    )


def _cancelled(request: PermissionRequestEvent, reason: str) -> PermissionResolvedEvent:
    return PermissionResolvedEvent(
        request_id=request.request_id, tool_call_id=request.tool_call_id, outcome="cancelled",
        reason=reason, answered_by="server",
        parent_tool_use_id=request.parent_tool_use_id, subagent_id=request.subagent_id,
    )


async def _events(store: Store, root_id: str):  # type: ignore[no-untyped-def]
    query = EventQuery(root_id=root_id, kinds=KINDS)
    page_id = None
    while True:
        page = await store.search(query, limit=100, page_id=page_id)
        for record in page.items:
            yield record.conversation_id, parse_event(record.json)
        page_id = page.next_page_id
        if page_id is None:
            return
