"""``ConversationStore`` on SQLite: one row per conversation, the record as JSON beside the
columns that are searched (tree, parent, status, times)."""

from __future__ import annotations

from typing import Any

import aiosqlite

from server.errors import ConversationNotFound
from server.events.models import utc_now
from server.store.base import MAX_PAGE, ConversationPage, ConversationRecord
from server.store.pagination import check_page_request, conversation_page, decode_conversation_page_id
from server.store.rows import CONVERSATION_COLUMNS, conversation_row, updated_conversation
from server.store.sqlite_database import SQLiteDatabase

_INSERT = (
    f"INSERT INTO conversations ({', '.join(CONVERSATION_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(CONVERSATION_COLUMNS))})"
)
# Every column again, in order: the unchanged ones are set to what they were.
_UPDATE = (
    f"UPDATE conversations SET ({', '.join(CONVERSATION_COLUMNS)}) = "
    f"({', '.join('?' * len(CONVERSATION_COLUMNS))}) WHERE id = ?"
)


def _record(row: Any) -> ConversationRecord:
    return ConversationRecord.model_validate_json(row[0])


class SQLiteConversationStore:
    """The conversation half of ``SQLiteStore``."""

    _db: SQLiteDatabase
    _page_key: bytes
    """Signs page tokens (``pagination.py``)."""

    async def create_conversation(self, record: ConversationRecord) -> None:
        """Store a new record; raises ``ValueError`` if its id is taken."""

        async def insert(conn: aiosqlite.Connection) -> None:
            taken = await conn.execute_fetchall("SELECT 1 FROM conversations WHERE id = ?", (record.id,))
            if list(taken):
                raise ValueError(f"conversation {record.id!r} already exists")
            await conn.execute(_INSERT, conversation_row(record))

        await self._db.write(insert)

    async def update_conversation(self, conversation_id: str, **fields: Any) -> ConversationRecord:
        async def update(conn: aiosqlite.Connection) -> ConversationRecord:
            rows = list(
                await conn.execute_fetchall("SELECT json FROM conversations WHERE id = ?", (conversation_id,))
            )
            if not rows:
                raise ConversationNotFound(conversation_id)
            record = updated_conversation(_record(rows[0]), fields, utc_now())
            await conn.execute(_UPDATE, (*conversation_row(record), conversation_id))
            return record

        return await self._db.write(update)

    async def get_conversation(self, conversation_id: str) -> ConversationRecord | None:
        row = await self._db.fetchone("SELECT json FROM conversations WHERE id = ?", (conversation_id,))
        return None if row is None else _record(row)

    async def tree(self, root_id: str) -> list[ConversationRecord]:
        rows = await self._db.fetchall(
            "SELECT json FROM conversations WHERE root_id = ? "
            "ORDER BY parent_id IS NOT NULL, created_at, rowid",
            (root_id,),
        )
        return [_record(row) for row in rows]

    async def search_conversations(
        self, *, status: str | None = None, limit: int = MAX_PAGE, page_id: str | None = None
    ) -> ConversationPage:
        """Root conversations, newest first (ties by id), keyset-paginated."""
        check_page_request(limit)
        cursor = decode_conversation_page_id(self._page_key, status, page_id)
        where, params = _roots_where(status)
        if cursor is not None:
            where += " AND (created_at, id) < (?, ?)"
            params += [cursor.created_at, cursor.id]
        rows = await self._db.fetchall(
            f"SELECT json, created_at FROM conversations WHERE {where} "
            "ORDER BY created_at DESC, id DESC LIMIT ?",
            [*params, limit + 1],
        )
        return conversation_page(self._page_key, status, limit, rows)

    async def count_conversations(self, *, status: str | None = None) -> int:
        where, params = _roots_where(status)
        row = await self._db.fetchone(f"SELECT count(*) FROM conversations WHERE {where}", params)
        return row[0] if row else 0


def _roots_where(status: str | None) -> tuple[str, list[Any]]:
    if status is None:
        return "parent_id IS NULL", []
    return "parent_id IS NULL AND status = ?", [status]
