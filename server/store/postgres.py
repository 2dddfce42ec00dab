"""``PostgresStore``: the store for several replicas, on PostgreSQL (asyncpg).

Appends go through ``GroupCommit`` like SQLite's: concurrent appends are written together,
one transaction per batch, and resume in ``seq`` order. The difference is where ``seq`` comes
from. Several processes may append to one tree, so no process can know the next ``seq``: each
batch's transaction advances the tree's counter row (``trees.last_seq``) by the batch's size and
numbers its events from what the row held. The row stays locked until the commit, so the
commits of one tree happen in ``seq`` order, whichever process makes them: a reader never sees
``seq`` n + 1 before n.

Searches are the same keyset-paginated SQL as SQLite's (``filters.py``), over the same indexes
that end with ``seq``; counts by stream and kind and time-range searches use the same summaries
(``postgres_summaries.py``), folded inside the append transactions.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections import Counter
from typing import Any, Callable, Coroutine, Sequence, TypeVar

import asyncpg

from ..errors import StoreUnavailable
from ..events import Event, EventRecord
from .base import MAX_PAGE, EventPage, EventQuery, SortOrder
from .filters import SqlDialect, count_sql, counted_sql, indexed_term
from .group_commit import GroupCommit, OnStored
from .health import StoreHealth
from .pagination import event_page, event_search_sql
from .postgres_conversations import PostgresConversationStore, update_row
from .postgres_pool import PostgresPool
from .postgres_summaries import FOLD_AFTER, counted, delete_summaries, fold, time_window
from .postgres_text import BEHIND, TEXT_PLAN, body_match, index_some, text_branches, text_search
from .rows import check_deletable, event_record, row_patch
from .server_secrets import PAGE_KEY, draw, postgres_secret

T = TypeVar("T")
log = logging.getLogger(__name__)
_TREE = "(SELECT id FROM trees WHERE root_id = {})"
DIALECT = SqlDialect(
    placeholder=lambda n: f"${n}", tree_match="tree = " + _TREE, body_match=body_match, text_branches=text_branches
)

_COLUMNS = ("conversation_id", "seq", "id", "kind", "source", "timestamp", "subagent_id", "parent_tool_use_id", "json")
# In EventRecord's field order, after root_id (which a search knows from its query).
_SEARCH_COLUMNS = ", ".join(_COLUMNS)
_GET = "SELECT t.root_id, " + ", ".join(f"e.{c}" for c in _COLUMNS) + " FROM events e JOIN trees t ON t.id = e.tree"
_TYPES = {"seq": "bigint"}
_INSERT = (
    f"INSERT INTO events (tree, {_SEARCH_COLUMNS}, body) SELECT * FROM unnest($1::bigint[], "
    + ", ".join(f"${n}::{_TYPES.get(c, 'text')}[]" for n, c in enumerate((*_COLUMNS, "body"), start=2))
    + ")"
)
# Every tree of a batch in two statements, not one per tree: with hundreds of trees running,
# a round trip each (each waiting for a busy event loop) held the counter rows locked for the
# whole batch. Locked first in one order (root_id) for every writer, so two never deadlock.
_LOCK_ALL = 'SELECT 1 FROM trees WHERE root_id = ANY($1::text[]) ORDER BY root_id COLLATE "C" FOR UPDATE'
_ADVANCE_ALL = (
    "UPDATE trees SET last_seq = trees.last_seq + w.n FROM unnest($1::text[], $2::bigint[]) AS w(root_id, n) "
    "WHERE trees.root_id = w.root_id RETURNING trees.root_id, trees.id, trees.last_seq, trees.counted_seq"
)
_ADVANCE_NEW = (
    "INSERT INTO trees (root_id, last_seq) VALUES ($1, $2) ON CONFLICT (root_id) DO UPDATE "
    "SET last_seq = trees.last_seq + EXCLUDED.last_seq RETURNING id, last_seq, counted_seq"
)


class _EventWriter:
    """Writes a batch of queued appends in one transaction, numbering them from the trees'
    counter rows. Restores each event's ``seq`` if the transaction fails."""

    def __init__(self, db: PostgresPool, *, fold_after: int = FOLD_AFTER) -> None:
        self._db = db
        self._fold_after = fold_after
        self._behind: set[int] | None = None
        """Keys of the trees this replica wrote whose newest events are not in the text index
        yet (``None``: not read yet; then every tree behind, whoever wrote it)."""
        self._indexing: asyncio.Task[None] | None = None
        self._stopped = False
        self._failing = False

    async def idle_work(self) -> bool:
        """Start copying the new events into the text index (``postgres_text.py``), in a task
        of the store's beside the appends (PostgreSQL takes both at once): the writer never
        waits for it."""
        idle = self._indexing is None or self._indexing.done()
        if idle and not self._stopped and (self._behind is None or self._behind):
            self._indexing = self._db.owned.start(self._index_behind())
        return False

    async def index_all(self) -> None:
        """Copy every event this replica knows to be behind into the index, now."""
        if self._indexing is not None:
            await asyncio.gather(self._indexing, return_exceptions=True)
        await self._index_behind()

    def stop(self) -> None:
        """Stop copying after the step in progress (the rest is copied after a restart)."""
        self._stopped = True

    async def _index_behind(self) -> None:
        try:
            if self._behind is None:
                self._behind = {row[0] for row in await self._db.fetch(BEHIND)}
            while self._behind and not self._stopped:
                tree = next(iter(self._behind))
                if await self._db.write(lambda conn: index_some(conn, tree)):
                    self._behind.discard(tree)
        except Exception as exc:  # tried again at the writer's next idle moment
            if not self._failing:
                log.warning("copying events into the text index failed (tried again later): %r", exc)
            self._failing = True
        else:
            self._failing = False

    async def write_appends(self, appends: Sequence[Any]) -> list[EventRecord]:
        """Store ``appends`` (``GroupCommit``'s queued items) and return their records, in order."""

        async def write(conn: asyncpg.Connection) -> list[EventRecord]:
            counts = Counter(item.root_id for item in appends)
            roots = sorted(counts)
            await conn.execute(_LOCK_ALL, roots)
            rows = await conn.fetch(_ADVANCE_ALL, roots, [counts[r] for r in roots])
            trees: dict[str, asyncpg.Record] = {row["root_id"]: row for row in rows}
            for root_id in roots:
                if root_id not in trees:  # a tree's first events (inserted after the locks: in order too)
                    trees[root_id] = await conn.fetchrow(_ADVANCE_NEW, root_id, counts[root_id])
            last = {root_id: trees[root_id]["last_seq"] - counts[root_id] for root_id in roots}
            records = []
            for item in appends:
                last[item.root_id] += 1
                item.event.seq = last[item.root_id]
                records.append(event_record(item.conversation_id, item.root_id, item.event))
            columns = [[trees[r.root_id]["id"] for r in records]]
            columns += [[getattr(r, column) for r in records] for column in _COLUMNS]
            columns.append([r.body or "" for r in records])
            await conn.execute(_INSERT, *columns)
            for record in records:  # the row an event states (a status), in the event's own transaction
                if record.row_update is not None:
                    patch = row_patch(record)
                    await update_row(conn, record.conversation_id, patch.values, patch.now)
            for tree in trees.values():
                if tree["last_seq"] - tree["counted_seq"] >= self._fold_after:
                    await fold(conn, tree["id"], tree["counted_seq"], tree["last_seq"])
            written[:] = [tree["id"] for tree in trees.values()]
            return records

        written: list[int] = []

        try:
            records = await self._db.write(write)
        except asyncpg.UniqueViolationError as exc:
            _restore(appends)
            if exc.constraint_name != "events_by_id":
                raise
            ids = ", ".join(repr(item.event.id) for item in appends[:3])
            raise ValueError(f"an event with id {ids} is already stored") from exc
        except BaseException:
            _restore(appends)
            raise
        if self._behind is not None:  # else read from the database at the next idle moment
            self._behind.update(written)
        return records


def _restore(appends: Sequence[Any]) -> None:
    for item in appends:
        item.event.seq = item.seq_before


class _CounterCommit(GroupCommit):
    """``GroupCommit`` whose batches number their events inside their own transaction (see the
    module docstring) instead of from a count kept in this process."""

    def __init__(self, writer: _EventWriter, *, max_batch: int) -> None:
        super().__init__(writer, max_batch=max_batch)  # type: ignore[arg-type]
        self.events = writer

    async def _commit(self, batch: list[Any]) -> None:
        try:
            records = await self.events.write_appends(batch)
        except StoreUnavailable as exc:  # the database failed, not one of the events
            self._fail_all(batch, exc)
            return
        except Exception:
            # Something in the batch is faulty (a duplicate id, an event that does not
            # serialize): one transaction each, so only that append fails.
            await self._commit_one_by_one(batch)
            return
        self._resolve_all(batch, records)

    def _resolve_all(self, batch: Sequence[Any], records: Sequence[EventRecord]) -> None:
        for item, record in zip(batch, records):
            self._resolve(item, record)

    async def _commit_one_by_one(self, batch: list[Any]) -> None:
        for n, item in enumerate(batch):
            try:
                records = await self.events.write_appends([item])
            except StoreUnavailable as exc:
                self._fail_all(batch[n:], exc)
                return
            except Exception as exc:
                self._fail(item, exc)
            else:
                self._resolve_all([item], records)


class PostgresStore(PostgresConversationStore):
    """``Store`` on PostgreSQL at ``url`` (``postgresql://user:pass@host:5432/db``).

    ``open()`` connects and migrates (refusing a schema newer than this code knows);
    ``close()`` writes what is queued and closes the pool. An append is committed, with
    PostgreSQL's durability, when it returns.
    """

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 10,
        max_batch: int = 1000,
        fold_after: int = FOLD_AFTER,
        timeout: float = 10.0,
    ) -> None:
        self.url = url
        self._db = PostgresPool(url, max_size=pool_size, timeout=timeout)
        self._max_batch = max_batch
        self._fold_after = fold_after
        self._commit: _CounterCommit | None = None
        self._append_observer: Callable[[float], None] | None = None
        self._page_key = bytes.fromhex(draw())  # replaced by the database's own on open

    @property
    def pool(self) -> PostgresPool:
        """The connections (leases share them)."""
        return self._db

    async def open(self) -> None:
        """Connect, migrate, start the writer task."""
        await self._db.open()
        try:
            self._page_key = await postgres_secret(self._db, PAGE_KEY)
        except BaseException:  # cancelled or failed once open: nobody else would close it
            await self._db.close()
            raise
        self._commit = _CounterCommit(_EventWriter(self._db, fold_after=self._fold_after), max_batch=self._max_batch)
        self._commit.observer = self._append_observer
        self._commit.start()

    async def close(self) -> None:
        """Wait for the writes in progress, write what is queued, then close every
        connection. Closing twice is harmless."""
        if self._commit is not None:
            self._commit.events.stop()
        await self._db.owned.drain()
        if self._commit is not None:
            await self._commit.close()
        await self._db.close()

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
        event id already stored, ``RuntimeError`` when the store is not open."""
        if self._commit is None:
            raise RuntimeError("the event store is not open")
        return await self._commit.append(conversation_id, root_id, event, on_stored)

    def submit(self, conversation_id: str, root_id: str, event: Event, on_stored: OnStored) -> None:
        """See ``EventStore.submit``."""
        if self._commit is None:
            raise RuntimeError("the event store is not open")
        self._commit.submit(conversation_id, root_id, event, on_stored)

    async def room(self) -> None:
        """See ``EventStore.room``."""
        if self._commit is not None:
            await self._commit.room()

    async def flush(self) -> None:
        """See ``EventStore.flush``."""
        if self._commit is not None:
            await self._commit.flush()

    def observe_appends(self, observer: Callable[[float], None] | None) -> None:
        """See ``EventStore.observe_appends``."""
        self._append_observer = observer
        if self._commit is not None:
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
        term = indexed_term(query, DIALECT)
        if term is None:  # no body filter, or a short term: the plain plans are the right ones
            return event_page(self._page_key, query, order, limit, await self.pool.fetch(sql, *params))
        rows = await self.pool.read_planned(lambda conn: text_search(conn, query.root_id, term, sql, params), TEXT_PLAN)
        return event_page(self._page_key, query, order, limit, rows)

    async def _search_sql(
        self, query: EventQuery, limit: int, page_id: str | None, order: SortOrder
    ) -> tuple[str, list[Any]]:
        return event_search_sql(
            query, key=self._page_key, dialect=DIALECT, columns=_SEARCH_COLUMNS, limit=limit, page_id=page_id, order=order,
            window=await time_window(self.pool, query, DIALECT),
        )

    async def count(self, query: EventQuery) -> int:
        if counted_sql(query, dialect=DIALECT) is not None:  # by stream and kind only
            mark, before = await counted(self.pool, query)
            sql, params = count_sql(dataclasses.replace(query, after_seq=mark), dialect=DIALECT)
            return before + await self.pool.fetchval(sql, *params)
        sql, params = count_sql(query, dialect=DIALECT, window=await time_window(self.pool, query, DIALECT))
        if indexed_term(query, DIALECT) is not None:
            return (await self.pool.read_planned(lambda conn: conn.fetch(sql, *params), TEXT_PLAN))[0][0]
        return await self.pool.fetchval(sql, *params)

    async def get(self, event_id: str) -> EventRecord | None:
        row = await self.pool.fetchrow(_GET + " WHERE e.id = $1", event_id)
        return None if row is None else EventRecord(*row)

    async def get_many(self, event_ids: Sequence[str]) -> list[EventRecord]:
        rows = await self.pool.fetch(_GET + " WHERE e.id = ANY($1::text[])", list(dict.fromkeys(event_ids)))
        found = {row["id"]: EventRecord(*row) for row in rows}
        return [found[event_id] for event_id in event_ids if event_id in found]

    async def last_seq(self, root_id: str) -> int:
        return await self.pool.fetchval("SELECT last_seq FROM trees WHERE root_id = $1", root_id) or 0

    async def index_pending(self) -> None:
        """Put every event this replica stored in the text index now (the writer does it by
        itself, a step at a time, whenever no append waits; searches never depend on it)."""
        await self.flush()
        if self._commit is not None:
            await self._commit.events.index_all()

    async def delete_conversation(self, conversation_id: str) -> None:
        """Delete a root conversation's whole tree: its records, every event and its lease.
        Raises ``ConversationNotFound``, or ``BadRequest`` for a sub-agent (delete its root)."""
        check_deletable(conversation_id, await self.get_conversation(conversation_id))

        async def delete(conn: asyncpg.Connection) -> None:
            await delete_summaries(conn, conversation_id)
            for table, column in (("event_text", "text_tree"), ("text_marks", "tree")):
                await conn.execute(f"DELETE FROM {table} WHERE {column} = " + _TREE.format("$1"), conversation_id)
            await conn.execute("DELETE FROM events WHERE tree = " + _TREE.format("$1"), conversation_id)
            await conn.execute("DELETE FROM trees WHERE root_id = $1", conversation_id)
            await conn.execute("DELETE FROM conversations WHERE root_id = $1", conversation_id)
            await conn.execute("DELETE FROM leases WHERE conversation_id = $1", conversation_id)

        await self._db.write(delete)

    async def explain_search(
        self, query: EventQuery, *, order: SortOrder = "TIMESTAMP", page_id: str | None = None
    ) -> list[str]:
        """Diagnostics: PostgreSQL's plan for ``search`` (one line per node)."""
        return await self._explain(*await self._search_sql(query, MAX_PAGE, page_id, order))

    async def explain_count(self, query: EventQuery) -> list[str]:
        """Diagnostics: PostgreSQL's plan for the rows ``count`` reads (past the mark, when
        the running counts answer for the rest)."""
        if counted_sql(query, dialect=DIALECT) is not None:
            mark, _ = await counted(self.pool, query)
            return await self._explain(*count_sql(dataclasses.replace(query, after_seq=mark), dialect=DIALECT))
        return await self._explain(*count_sql(query, dialect=DIALECT, window=await time_window(self.pool, query, DIALECT)))

    async def _explain(self, sql: str, params: Sequence[Any]) -> list[str]:
        return [row[0] for row in await self.pool.fetch("EXPLAIN " + sql, *params)]
