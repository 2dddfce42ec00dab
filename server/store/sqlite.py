"""``SQLiteStore``: the default store, one SQLite file in WAL mode.

Appends go through ``GroupCommit`` (one writer task, one transaction per batch) into
``SQLiteEventWriter``; searches are keyset-paginated SQL from ``filters.py`` over indexes that
end with ``seq`` (``sqlite_schema.py``), so a page costs its own rows wherever it starts.
Counts by stream and kind read running counts (``counted_sql``) instead of the rows.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Coroutine, Sequence, TypeVar

import aiosqlite

from ..events import Event, EventRecord
from .base import MAX_PAGE, ConversationRecord, EventPage, EventQuery, SortOrder
from .filters import Window, count_sql, counted_sql
from .group_commit import GroupCommit, OnStored
from .health import StoreHealth
from .pagination import event_page, event_search_sql
from .rows import check_deletable
from .server_secrets import PAGE_KEY, draw, sqlite_secret
from .sqlite_conversations import SQLiteConversationStore
from .sqlite_database import SQLiteDatabase
from .sqlite_writer import COLUMNS, DIALECT, FOLD_AFTER, SQLiteEventWriter


_SEARCH_COLUMNS = ", ".join(COLUMNS)
_GET = "SELECT t.root_id, " + ", ".join(f"e.{c}" for c in COLUMNS) + " FROM events e JOIN trees t ON t.id = e.tree"
_IDS_PER_QUERY = 500
T = TypeVar("T")


class SQLiteStore(SQLiteConversationStore):
    """``Store`` on SQLite at ``url`` (``sqlite:///abs/path.db`` or ``sqlite:///:memory:``).

    WAL mode with ``synchronous=NORMAL``: an append is committed when it returns and survives
    the process crashing; a power loss may lose the last commits. Open with ``open()``,
    release with ``close()``.
    """

    def __init__(
        self, url: str, *, readers: int = 4, max_batch: int = 1000, fold_after: int = FOLD_AFTER, timeout: float = 10.0
    ) -> None:
        self.url = url
        self._db = SQLiteDatabase(url, readers=readers, timeout=timeout)
        self._writer = SQLiteEventWriter(self._db, fold_after=fold_after)
        self._commit = GroupCommit(self._writer, max_batch=max_batch)
        self._page_key = bytes.fromhex(draw())  # replaced by the database's own on open

    async def open(self) -> None:
        """Create the file (and its folder) if needed, migrate, start the writer task."""
        await self._db.open()
        try:
            self._page_key = await sqlite_secret(self._db, PAGE_KEY)
        except BaseException:  # cancelled or failed once open: nobody else would close it
            await self._db.close()
            raise
        self._commit.start()

    async def close(self) -> None:
        """Wait for the writes in progress, write what is queued, then close every connection."""
        self._writer.stop()  # the text index catches up after the next open
        await self._db.owned.drain()
        await self._commit.close()
        await self._db.close()

    async def create_conversation(self, record: ConversationRecord) -> None:
        """See ``SQLiteConversationStore.create_conversation``."""
        await super().create_conversation(record)
        if record.is_root:  # deleting a tree deletes its events with its rows: this one has none
            self._commit.new_tree(record.root_id)

    @property
    def health(self) -> StoreHealth:
        """See ``Store.health``."""
        return self._db.health

    def own(self, work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """See ``Store.own``."""
        return self._db.owned.start(work)

    async def ready(self) -> str | None:
        """See ``Store.ready``."""
        return await self._db.ready()

    async def append(
        self, conversation_id: str, root_id: str, event: Event, on_stored: OnStored | None = None
    ) -> EventRecord:
        """See ``EventStore.append``. Raises ``ValueError`` for an ephemeral event or an
        event id already stored."""
        return await self._commit.append(conversation_id, root_id, event, on_stored)

    def submit(self, conversation_id: str, root_id: str, event: Event, on_stored: OnStored) -> None:
        """See ``EventStore.submit``."""
        self._commit.submit(conversation_id, root_id, event, on_stored)

    async def room(self) -> None:
        """See ``EventStore.room``."""
        await self._commit.room()

    async def flush(self) -> None:
        """See ``EventStore.flush``."""
        await self._commit.flush()

    def observe_appends(self, observer: Callable[[float], None] | None) -> None:
        """See ``EventStore.observe_appends``."""
        self._commit.observer = observer

    async def search(
        self,
        query: EventQuery,
        *,
        limit: int = MAX_PAGE,
        page_id: str | None = None,
        order: SortOrder = "TIMESTAMP",
    ) -> EventPage:
        sql, params = await self._search_sql(query, limit, page_id, order)
        return event_page(self._page_key, query, order, limit, await self._db.fetchall(sql, params))

    async def _search_sql(
        self, query: EventQuery, limit: int, page_id: str | None, order: SortOrder
    ) -> tuple[str, Any]:
        return event_search_sql(
            query,
            key=self._page_key,
            dialect=DIALECT,
            columns=_SEARCH_COLUMNS,
            limit=limit,
            page_id=page_id,
            order=order,
            window=await self._time_window(query),
        )

    async def count(self, query: EventQuery) -> int:
        sql, params = await self._count_sql(query)
        row = await self._db.fetchone(sql, params)
        return row[0] if row else 0

    async def get(self, event_id: str) -> EventRecord | None:
        row = await self._db.fetchone(_GET + " WHERE e.id = ?", (event_id,))
        return None if row is None else EventRecord(*row)

    async def get_many(self, event_ids: Sequence[str]) -> list[EventRecord]:
        found: dict[str, EventRecord] = {}
        unique = list(dict.fromkeys(event_ids))
        for start in range(0, len(unique), _IDS_PER_QUERY):
            chunk = unique[start : start + _IDS_PER_QUERY]
            marks = ", ".join("?" * len(chunk))
            for row in await self._db.fetchall(f"{_GET} WHERE e.id IN ({marks})", chunk):
                record = EventRecord(*row)
                found[record.id] = record
        return [found[event_id] for event_id in event_ids if event_id in found]

    async def last_seq(self, root_id: str) -> int:
        return await self._writer.last_seq(root_id)

    async def index_pending(self) -> None:
        """Put every stored event in the text index now (the writer does it by itself, a
        step at a time, beside the appends; searches never depend on it)."""

        async def index_all() -> None:
            while await self._writer.index_step():
                pass

        await self.flush()
        await self._db.owned.run(index_all())

    async def delete_conversation(self, conversation_id: str) -> None:
        """Delete a root conversation's whole tree: its records and every event. Raises
        ``ConversationNotFound``, or ``BadRequest`` for a sub-agent (delete its root)."""
        check_deletable(conversation_id, await self.get_conversation(conversation_id))

        async def delete(conn: aiosqlite.Connection) -> None:
            # One transaction: a large tree holds appends up for as long as it takes.
            await self._writer.delete_tree(conn, conversation_id)
            await conn.execute("DELETE FROM conversations WHERE root_id = ?", (conversation_id,))
            self._commit.forget(conversation_id)

        await self._db.write(delete)

    async def explain_search(
        self, query: EventQuery, *, order: SortOrder = "TIMESTAMP", page_id: str | None = None
    ) -> list[str]:
        """Diagnostics: SQLite's query plan for ``search`` (one line per step)."""
        sql, params = await self._search_sql(query, MAX_PAGE, page_id, order)
        return await self._explain(sql, params)

    async def explain_count(self, query: EventQuery) -> list[str]:
        """Diagnostics: SQLite's query plan for ``count``."""
        return await self._explain(*await self._count_sql(query))

    async def _count_sql(self, query: EventQuery) -> tuple[str, list[Any]]:
        counted = counted_sql(query, dialect=DIALECT)
        if counted is not None:
            return counted
        return count_sql(query, dialect=DIALECT, window=await self._time_window(query))

    async def _time_window(self, query: EventQuery) -> Window | None:
        # A time range reads only the seq range its summarized blocks point to.
        return await self._writer.time_window(query)

    async def _explain(self, sql: str, params: Sequence[Any]) -> list[str]:
        return [row[3] for row in await self._db.fetchall("EXPLAIN QUERY PLAN " + sql, params)]
