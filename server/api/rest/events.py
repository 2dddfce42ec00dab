"""A conversation's events: search, count, get, batch get.

Bodies are built from the stored JSON as it is: events are never re-serialized on the way out.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BeforeValidator

from ..openapi import errors
from ...errors import EventNotFound, SubagentNotFound
from ...runtime import Runtime
from ...runtime.tree import descendants, spawned_by
from ...store import EventQuery
from ...store.base import MAX_SEQ

router = APIRouter(prefix="/api/conversations/{conversation_id}/events", tags=["events"])


def _iso_text(value: Any) -> Any:
    # pydantic also reads a bare number as Unix time; the document says ISO 8601, so that is it.
    if isinstance(value, str) and not _ISO_DATE.match(value):
        raise ValueError("an ISO 8601 date-time, e.g. 2025-01-31T12:00:00Z")
    return value


_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
Timestamp = Annotated[datetime, BeforeValidator(_iso_text)]


class EventFilters:
    """The query parameters every event route shares."""

    def __init__(
        self,
        kind: list[str] | None = Query(default=None, description="Event kind(s), bare class names."),
        source: Literal["agent", "user", "environment"] | None = None,
        body: str | None = Query(default=None, max_length=1000, description="Substring of the event."),
        timestamp__gte: Timestamp | None = None,
        timestamp__lt: Timestamp | None = None,
        after_seq: int | None = Query(default=None, ge=0, le=MAX_SEQ),
        parent_tool_use_id: str | None = Query(
            default=None, description="The sub-agent spawned by this call and every sub-agent below it."
        ),
        subagent_id: str | None = None,
        include_subagents: bool = False,
    ) -> None:
        self.kind, self.source, self.body = kind, source, body
        self.timestamp_gte, self.timestamp_lt = _utc(timestamp__gte), _utc(timestamp__lt)
        self.after_seq = after_seq
        self.parent_tool_use_id, self.subagent_id = parent_tool_use_id, subagent_id
        self.include_subagents = include_subagents

    async def query(self, runtime: Runtime, conversation_id: str) -> EventQuery:
        """Resolve the sub-agent filters into the streams to read. Default: the conversation's own."""
        record = await runtime.get(conversation_id)
        streams: list[str] | None = [record.id]
        if self.subagent_id or self.parent_tool_use_id or self.include_subagents:
            tree = await runtime.store.tree(record.root_id)
            below = descendants(tree, record.id)
            if self.parent_tool_use_id:
                child = spawned_by(tree, self.parent_tool_use_id)
                streams = descendants(tree, child.id) if child and child.id in below else []
            elif self.subagent_id:
                if self.subagent_id not in below:
                    raise SubagentNotFound(self.subagent_id)
                streams = descendants(tree, self.subagent_id) if self.include_subagents else [self.subagent_id]
            else:
                streams = below
            if len(streams) == len(tree):
                streams = None  # the whole tree: one ordered read, not one per stream
        return EventQuery(
            root_id=record.root_id,
            conversation_ids=streams,
            kinds=self.kind,
            source=self.source,
            body=self.body,
            timestamp_gte=self.timestamp_gte,
            timestamp_lt=self.timestamp_lt,
            after_seq=self.after_seq,
        )


def _utc(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


def _json(body: str) -> Response:
    return Response(content=body, media_type="application/json")


@router.get("/search", responses=errors(400, 404))
async def search_events(
    conversation_id: str,
    request: Request,
    filters: EventFilters = Depends(),
    sort_order: Literal["TIMESTAMP", "TIMESTAMP_DESC"] = "TIMESTAMP",
    page_id: str | None = None,
    limit: int = Query(default=100, ge=1, le=100),
) -> Response:
    """One page of events, ``{items, next_page_id}``, in ``seq`` order (or reverse)."""
    runtime: Runtime = request.app.state.runtime
    query = await filters.query(runtime, conversation_id)
    if query.conversation_ids == []:
        return _json('{"items":[],"next_page_id":null}')
    page = await runtime.store.search(query, limit=limit, page_id=page_id, order=sort_order)
    items = ",".join(r.json for r in page.items)
    return _json(f'{{"items":[{items}],"next_page_id":{json.dumps(page.next_page_id)}}}')


@router.get("/count", responses=errors(404))
async def count_events(conversation_id: str, request: Request, filters: EventFilters = Depends()) -> int:
    """How many events match (same filters as search)."""
    runtime: Runtime = request.app.state.runtime
    query = await filters.query(runtime, conversation_id)
    if query.conversation_ids == []:
        return 0
    return await runtime.store.count(query)


@router.get("", responses=errors(404))
async def batch_get_events(
    conversation_id: str, request: Request, ids: list[str] = Query(min_length=1, max_length=100)
) -> Response:
    """Several events by id, in the order asked; ``null`` for an id this tree does not hold."""
    runtime: Runtime = request.app.state.runtime
    record = await runtime.get(conversation_id)
    found = {r.id: r for r in await runtime.store.get_many(ids) if r.root_id == record.root_id}
    return _json("[" + ",".join(found[i].json if i in found else "null" for i in ids) + "]")


@router.get("/{event_id}", responses=errors(404))
async def get_event(conversation_id: str, event_id: str, request: Request) -> Response:
    runtime: Runtime = request.app.state.runtime
    record = await runtime.get(conversation_id)
    event = await runtime.store.get(event_id)
    if event is None or event.root_id != record.root_id:
        raise EventNotFound(event_id)
    return _json(event.json)
