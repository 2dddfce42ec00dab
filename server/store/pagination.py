"""Page tokens for keyset pagination, shared by every store backend (no I/O).

A ``page_id`` is opaque to clients: ``<payload>.<mac>``, both urlsafe base64 without padding.
The payload is a small JSON value, where the next page starts; the mac is an HMAC-SHA256 (cut
to 128 bits) under the server's page key (``server_secrets.py``: one per database, so every
replica accepts every other's tokens) over the token's purpose (events in one order, or
conversations), the query's filters and the payload. The mac is checked before the payload is
parsed, so a token this server did not make, or one that comes back with other filters, is
refused with ``InvalidPageId`` whatever it holds: a search never silently restarts from the
first page, and a forged position (nested JSON, a number past any ``seq``) is never read.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import InvalidPageId
from ..events import EventRecord
from .base import MAX_PAGE, MAX_SEQ, ConversationPage, ConversationRecord, EventPage, EventQuery, SortOrder
from .filters import SqlDialect, Window, search_sql
from .rows import timestamp_text

MAX_PAGE_ID = 1024
"""Characters a ``page_id`` may hold; this server's are far shorter."""
_MAC_BYTES = 16


def check_page_request(limit: int, order: SortOrder = "TIMESTAMP") -> None:
    """Refuse a page size outside 1..``MAX_PAGE`` or an unknown order (``ValueError``)."""
    if not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"limit must be between 1 and {MAX_PAGE}, not {limit}")
    if order not in ("TIMESTAMP", "TIMESTAMP_DESC"):
        raise ValueError(f"order must be TIMESTAMP or TIMESTAMP_DESC, not {order!r}")


def _mac(key: bytes, purpose: str, binding: str, payload: bytes) -> bytes:
    message = b"\n".join((purpose.encode(), binding.encode(), payload))
    return hmac.new(key, message, hashlib.sha256).digest()[:_MAC_BYTES]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode_page_id(key: bytes, purpose: str, binding: str, position: Any) -> str:
    """A token for ``position`` (JSON-able), signed with ``key`` for ``purpose`` and the
    filters' ``binding``."""
    payload = json.dumps(position, separators=(",", ":")).encode()
    return f"{_b64(payload)}.{_b64(_mac(key, purpose, binding, payload))}"


def decode_page_id(key: bytes, page_id: str, purpose: str, binding: str) -> Any:
    """The position inside ``page_id``; raises ``InvalidPageId`` unless ``key`` signed it for
    this purpose and binding."""
    try:
        if len(page_id) > MAX_PAGE_ID:
            raise ValueError("too long")
        payload_text, mac_text = page_id.split(".")
        payload, mac = _unb64(payload_text), _unb64(mac_text)
        if _b64(payload) != payload_text or _b64(mac) != mac_text:
            raise ValueError("not as this server writes it")  # one token, one spelling
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise InvalidPageId(page_id[:80]) from None
    if not hmac.compare_digest(mac, _mac(key, purpose, binding, payload)):
        raise InvalidPageId(page_id[:80])
    return json.loads(payload)  # ours: signed, so small and flat


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


def encode_event_page_id(key: bytes, query: EventQuery, order: SortOrder, last_seq: int) -> str:
    """The token for the page after the one that ended at ``last_seq``."""
    return encode_page_id(key, f"events:{order}", event_query_binding(query), last_seq)


def decode_event_page_id(key: bytes, query: EventQuery, order: SortOrder, page_id: str | None) -> int | None:
    """The ``seq`` the previous page ended at (``None`` for the first page)."""
    if page_id is None:
        return None
    position = decode_page_id(key, page_id, f"events:{order}", event_query_binding(query))
    if type(position) is not int or not 0 <= position <= MAX_SEQ:
        raise InvalidPageId(page_id[:80])
    return position


def event_search_sql(
    query: EventQuery,
    *,
    key: bytes,
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
    cursor = decode_event_page_id(key, query, order, page_id)
    return search_sql(
        query, dialect=dialect, columns=columns, order=order, cursor=cursor, limit=limit + 1, window=window
    )


def event_page(
    key: bytes, query: EventQuery, order: SortOrder, limit: int, rows: Sequence[Sequence[Any]]
) -> EventPage:
    """The page ``event_search_sql``'s rows make, its next token signed with ``key``."""
    items = [EventRecord(query.root_id, *row) for row in rows[:limit]]
    next_page_id = None
    if len(rows) > limit:
        next_page_id = encode_event_page_id(key, query, order, items[-1].seq or 0)
    return EventPage(items=items, next_page_id=next_page_id)


@dataclass(frozen=True, slots=True)
class ConversationCursor:
    """Where a page of root conversations (newest first) ended."""

    created_at: str
    """The last item's ``created_at`` as stored (``timestamp_text``)."""
    id: str


def encode_conversation_page_id(key: bytes, status: str | None, cursor: ConversationCursor) -> str:
    """The token for the page of root conversations after ``cursor``, for this status filter."""
    return encode_page_id(key, "conversations", json.dumps(status), [cursor.created_at, cursor.id])


def decode_conversation_page_id(key: bytes, status: str | None, page_id: str | None) -> ConversationCursor | None:
    """The cursor inside ``page_id`` (``None`` for the first page); raises ``InvalidPageId``."""
    if page_id is None:
        return None
    position = decode_page_id(key, page_id, "conversations", json.dumps(status))
    if not (
        isinstance(position, list)
        and len(position) == 2
        and all(isinstance(part, str) for part in position)
    ):
        raise InvalidPageId(page_id[:80])
    return ConversationCursor(created_at=position[0], id=position[1])


def conversation_page(
    key: bytes, status: str | None, limit: int, rows: Sequence[Sequence[Any]]
) -> ConversationPage:
    """The page made by up to ``limit + 1`` rows of (record JSON, stored ``created_at``),
    newest first."""
    items = [ConversationRecord.model_validate_json(row[0]) for row in rows[:limit]]
    next_page_id = None
    if len(rows) > limit:
        cursor = ConversationCursor(created_at=rows[limit - 1][1], id=items[-1].id)
        next_page_id = encode_conversation_page_id(key, status, cursor)
    return ConversationPage(items=items, next_page_id=next_page_id)
