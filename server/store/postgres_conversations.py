"""``ConversationStore`` on PostgreSQL: one row per conversation, the record as JSON beside the
columns that are searched (tree, parent, status, times); the same layout as SQLite's."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import asyncpg

from ..errors import ConversationNotFound
from taskwire_client.events import utc_now
from .base import MAX_PAGE, ConversationPage, ConversationRecord
from .pagination import (
    ConversationCursor,
    check_page_request,
    decode_conversation_page_id,
    encode_conversation_page_id,
)
from .postgres_pool import PostgresPool
from .rows import CONVERSATION_COLUMNS, conversation_row, updated_conversation

_INSERT = (
    f"INSERT INTO conversations ({', '.join(CONVERSATION_COLUMNS)}) VALUES ($1, $2, $3, $4, $5, $6, $7) "
    "ON CONFLICT (id) DO NOTHING RETURNING id"
)
_UPDATE = "UPDATE conversations SET status = $2, updated_at = $3, json = $4 WHERE id = $1"


async def update_row(
    conn: asyncpg.Connection, conversation_id: str, fields: dict[str, Any], now: datetime
) -> ConversationRecord | None:
    """Set ``fields`` on a conversation's row inside the caller's transaction (read first, under
    a row lock); the record as stored, or ``None`` when there is no such row."""
    json = await conn.fetchval("SELECT json FROM conversations WHERE id = $1 FOR UPDATE", conversation_id)
    if json is None:
        return None
    record = updated_conversation(_record(json), fields, now)
    row = dict(zip(CONVERSATION_COLUMNS, conversation_row(record)))
    await conn.execute(_UPDATE, record.id, row["status"], row["updated_at"], row["json"])
    return record


def _record(json: str) -> ConversationRecord:
    return ConversationRecord.model_validate_json(json)


class PostgresConversationStore:
    """The conversation half of ``PostgresStore``."""

    _db: PostgresPool
    _page_key: bytes
    """Signs page tokens (``pagination.py``)."""

    async def create_conversation(self, record: ConversationRecord) -> None:
        """Store a new record; raises ``ValueError`` if its id is taken."""
        if await self._db.write(lambda conn: conn.fetchval(_INSERT, *conversation_row(record))) is None:
            raise ValueError(f"conversation {record.id!r} already exists")

    async def update_conversation(
        self, conversation_id: str, *, held: ConversationRecord | None = None, **fields: Any
    ) -> ConversationRecord:
        """See ``ConversationStore.update_conversation``. ``held`` is not used: the whole JSON is
        written, so it is read first (under a row lock), whoever else may have written it."""

        async def update(conn: asyncpg.Connection) -> ConversationRecord:
            record = await update_row(conn, conversation_id, fields, utc_now())
            if record is None:
                raise ConversationNotFound(conversation_id)
            return record

        return await self._db.write(update)

    async def get_conversation(self, conversation_id: str) -> ConversationRecord | None:
        json = await self._db.fetchval("SELECT json FROM conversations WHERE id = $1", conversation_id)
        return None if json is None else _record(json)

    async def tree(self, root_id: str) -> list[ConversationRecord]:
        rows = await self._db.fetch(
            "SELECT json FROM conversations WHERE root_id = $1 "
            "ORDER BY parent_id IS NOT NULL, created_at, position",
            root_id,
        )
        return [_record(row[0]) for row in rows]

    async def search_conversations(
        self, *, status: str | None = None, limit: int = MAX_PAGE, page_id: str | None = None
    ) -> ConversationPage:
        """Root conversations, newest first (ties by id), keyset-paginated."""
        check_page_request(limit)
        cursor = decode_conversation_page_id(self._page_key, status, page_id)
        where, params = _roots_where(status)
        if cursor is not None:
            where += f" AND (created_at, id) < (${len(params) + 1}, ${len(params) + 2})"
            params += [cursor.created_at, cursor.id]
        rows = await self._db.fetch(
            f"SELECT json, created_at FROM conversations WHERE {where} "
            f"ORDER BY created_at DESC, id DESC LIMIT ${len(params) + 1}",
            *params, limit + 1,
        )
        items = [_record(row[0]) for row in rows[:limit]]
        next_page_id = None
        if len(rows) > limit:
            last = rows[limit - 1]
            next_page_id = encode_conversation_page_id(
                self._page_key, status, ConversationCursor(created_at=last[1], id=items[-1].id)
            )
        return ConversationPage(items=items, next_page_id=next_page_id)

    async def count_conversations(self, *, status: str | None = None) -> int:
        where, params = _roots_where(status)
        return await self._db.fetchval(f"SELECT count(*) FROM conversations WHERE {where}", *params)


def _roots_where(status: str | None) -> tuple[str, list[Any]]:
    if status is None:
        return "parent_id IS NULL", []
    return "parent_id IS NULL AND status = $1", [status]
