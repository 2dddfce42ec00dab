"""``ConversationStore`` on SQLite: one row per conversation, the record as JSON beside the
columns that are searched (tree, parent, status, times)."""

from __future__ import annotations

import functools
from typing import Any, Sequence

from ..errors import ConversationNotFound
from taskwire_client.events import utc_now
from .base import MAX_PAGE, ConversationPage, ConversationRecord
from .pagination import check_page_request, conversation_page, decode_conversation_page_id
from .rows import CONVERSATION_COLUMNS, ConversationPatch, conversation_patch, conversation_row
from .sqlite_database import SQLiteDatabase

_INSERT = (
    f"INSERT INTO conversations ({', '.join(CONVERSATION_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(CONVERSATION_COLUMNS))}) ON CONFLICT (id) DO NOTHING RETURNING id"
)


@functools.lru_cache(maxsize=256)
def _update_sql(fields: Sequence[str], status: bool, returned: str) -> str:
    """One ``UPDATE``: each field set inside the stored JSON (``json_set`` with the value's
    JSON text), the searched columns beside it, the new record (or only its id) returned.
    Field names are the record's own (``conversation_patch`` checks them), never a client's text."""
    paths = "".join(f", '$.{name}', json(?)" for name in ("updated_at", *fields))
    return (
        f"UPDATE conversations SET updated_at = ?, {'status = ?, ' if status else ''}"
        f"json = json_set(json{paths}) WHERE id = ? RETURNING {returned}"
    )


def update_statement(conversation_id: str, patch: ConversationPatch, returned: str = "id") -> tuple[str, list[Any]]:
    """The ``UPDATE`` writing ``patch`` on a conversation's row, and its parameters."""
    params: list[Any] = [patch.updated_at]
    if patch.status is not None:
        params.append(patch.status)
    params += [patch.updated_at_json, *patch.fields.values(), conversation_id]
    return _update_sql(tuple(patch.fields), patch.status is not None, returned), params


def _record(row: Any) -> ConversationRecord:
    return ConversationRecord.model_validate_json(row[0])


class SQLiteConversationStore:
    """The conversation half of ``SQLiteStore``."""

    _db: SQLiteDatabase
    _page_key: bytes
    """Signs page tokens (``pagination.py``)."""

    async def create_conversation(self, record: ConversationRecord) -> None:
        """Store a new record; raises ``ValueError`` if its id is taken."""
        # One statement, one trip to the writer's thread (a model call's usage, a status: a
        # busy server makes thousands a second, and each holds the write lock).
        if not await self._db.write_statement(_INSERT, conversation_row(record)):
            raise ValueError(f"conversation {record.id!r} already exists")

    async def update_conversation(
        self, conversation_id: str, *, held: ConversationRecord | None = None, **fields: Any
    ) -> ConversationRecord:
        """See ``ConversationStore.update_conversation``: ``held`` is returned with the fields
        set, the stored JSON not parsed back (a model call's usage: with many agents at once,
        parsing every record back was 6 % of the server's loop)."""
        patch = conversation_patch(fields, utc_now())
        rows = await self._db.write_statement(*update_statement(conversation_id, patch, "json" if held is None else "id"))
        if not rows:
            raise ConversationNotFound(conversation_id)
        if held is None:
            return _record(rows[0])
        return held.model_copy(update={**patch.values, "updated_at": patch.now})

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
