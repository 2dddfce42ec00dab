"""Page tokens for keyset pagination, shared by every store backend.

A ``page_id`` is opaque to clients: urlsafe base64 (no padding) of a small JSON object
holding where the next page starts (``p``) and a short hash (``h``) binding that position to
the token's purpose (events in one order, or conversations) and to the query's filters. A
token that does not decode, or whose hash does not match the query it comes back with, is
refused with ``InvalidPageId``: a search never silently restarts from the first page.

The hash is a consistency check, not a secret: forging a token only picks a start point,
which ``after_seq`` allows anyway.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Sequence

from server.errors import InvalidPageId
from server.events import EventRecord
from server.store.base import MAX_PAGE, ConversationPage, ConversationRecord, EventPage, EventQuery, SortOrder
from server.store.filters import SqlDialect, Window, search_sql
from server.store.rows import timestamp_text


def check_page_request(limit: int, order: SortOrder = "TIMESTAMP") -> None:
    """Refuse a page size outside 1..``MAX_PAGE`` or an unknown order (``ValueError``)."""
    if not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"limit must be between 1 and {MAX_PAGE}, not {limit}")
    if order not in ("TIMESTAMP", "TIMESTAMP_DESC"):
        raise ValueError(f"order must be TIMESTAMP or TIMESTAMP_DESC, not {order!r}")


def _digest(purpose: str, binding: str, position: Any) -> str:
    material = json.dumps([purpose, binding, position], separators=(",", ":"), sort_keys=True)
    return hashlib.blake2b(material.encode(), digest_size=8).hexdigest()


def encode_page_id(purpose: str, binding: str, position: Any) -> str:
    """A token for ``position`` (JSON-able), bound to ``purpose`` and the filters' ``binding``."""
    body = {"p": position, "h": _digest(purpose, binding, position)}
    raw = json.dumps(body, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def decode_page_id(page_id: str, purpose: str, binding: str) -> Any:
    """The position inside ``page_id``; raises ``InvalidPageId`` unless this purpose and
    binding made it."""
    try:
        raw = base64.urlsafe_b64decode(page_id + "=" * (-len(page_id) % 4))
        body = json.loads(raw)
        position, digest = body["p"], body["h"]
    except (binascii.Error, ValueError, TypeError, KeyError):
        raise InvalidPageId(page_id) from None
    if not isinstance(digest, str) or digest != _digest(purpose, binding, position):
        raise InvalidPageId(page_id)
    return position


def event_query_binding(query: EventQuery) -> str:
    """The filters of ``query`` in a canonical form (order-insensitive lists, UTC times)."""

    def listed(values: Any) -> list[str] | None:
        return None if values is None else sorted(set(values))

    def when(value: Any) -> str | None:
        return None if value is None else timestamp_text(value)

    canonical = {
        "root": query.root_id,
        "conversations": listed(query.conversation_ids),
        "kinds": listed(query.kinds),
        "source": query.source,
        "body": query.body,
        "gte": when(query.timestamp_gte),
        "lt": when(query.timestamp_lt),
        "after": query.after_seq,
        "until": query.until_seq,
        "ptu": query.parent_tool_use_id,
        "subagent": query.subagent_id,
    }
    return json.dumps(canonical, separators=(",", ":"), sort_keys=True)


def encode_event_page_id(query: EventQuery, order: SortOrder, last_seq: int) -> str:
    """The token for the page after the one that ended at ``last_seq``."""
    return encode_page_id(f"events:{order}", event_query_binding(query), last_seq)


def decode_event_page_id(query: EventQuery, order: SortOrder, page_id: str | None) -> int | None:
    """The ``seq`` the previous page ended at (``None`` for the first page)."""
    if page_id is None:
        return None
    position = decode_page_id(page_id, f"events:{order}", event_query_binding(query))
    if type(position) is not int or position < 0:
        raise InvalidPageId(page_id)
    return position


def event_search_sql(
    query: EventQuery,
    *,
    dialect: SqlDialect,
    columns: str,
    limit: int,
    page_id: str | None,
    order: SortOrder,
    window: Window | None = None,
) -> tuple[str, list[Any]]:
    """Check a search request and give the SQL for its page, plus one row that tells whether
    another page follows (``event_page`` cuts it off). ``columns`` must select, in order,
    ``EventRecord``'s fields after ``root_id``."""
    check_page_request(limit, order)
    cursor = decode_event_page_id(query, order, page_id)
    return search_sql(
        query, dialect=dialect, columns=columns, order=order, cursor=cursor, limit=limit + 1, window=window
    )


def event_page(query: EventQuery, order: SortOrder, limit: int, rows: Sequence[Sequence[Any]]) -> EventPage:
    """The page ``event_search_sql``'s rows make."""
    items = [EventRecord(query.root_id, *row) for row in rows[:limit]]
    next_page_id = None
    if len(rows) > limit:
        next_page_id = encode_event_page_id(query, order, items[-1].seq or 0)
    return EventPage(items=items, next_page_id=next_page_id)


@dataclass(frozen=True, slots=True)
class ConversationCursor:
    """Where a page of root conversations (newest first) ended."""

    created_at: str
    """The last item's ``created_at`` as stored (``timestamp_text``)."""
    id: str


def encode_conversation_page_id(status: str | None, cursor: ConversationCursor) -> str:
    """The token for the page of root conversations after ``cursor``, for this status filter."""
    return encode_page_id("conversations", json.dumps(status), [cursor.created_at, cursor.id])


def decode_conversation_page_id(status: str | None, page_id: str | None) -> ConversationCursor | None:
    """The cursor inside ``page_id`` (``None`` for the first page); raises ``InvalidPageId``."""
    if page_id is None:
        return None
    position = decode_page_id(page_id, "conversations", json.dumps(status))
    if not (
        isinstance(position, list)
        and len(position) == 2
        and all(isinstance(part, str) for part in position)
    ):
        raise InvalidPageId(page_id)
    return ConversationCursor(created_at=position[0], id=position[1])


def conversation_page(status: str | None, limit: int, rows: Sequence[Sequence[Any]]) -> ConversationPage:
    """The page made by up to ``limit + 1`` rows of (record JSON, stored ``created_at``),
    newest first."""
    items = [ConversationRecord.model_validate_json(row[0]) for row in rows[:limit]]
    next_page_id = None
    if len(rows) > limit:
        cursor = ConversationCursor(created_at=rows[limit - 1][1], id=items[-1].id)
        next_page_id = encode_conversation_page_id(status, cursor)
    return ConversationPage(items=items, next_page_id=next_page_id)
