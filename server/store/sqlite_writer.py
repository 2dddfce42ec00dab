"""How the SQLite store writes: batches of events, tree keys, and the summaries of the log.

Everything that writes runs on the writer connection under the database's write lock, in a
task the store owns (``GroupCommit``'s writer, ``SQLiteDatabase.write``). A
tree's key (``trees.id``) is cached only once committed, so a rolled back or deleted tree is
never written to under a stale key.

Summaries (``sqlite_schema.py``) are kept by two triggers that the writer connection creates
for itself (``TEMP``: they carry this store's ``fold_after`` and live as long as the
connection, so no migration holds them): when an insert brings a tree ``fold_after`` events
past its mark (``trees.counted_seq``), the mark moves to that event, and moving it adds the
events it passed to ``event_counts`` and to one new ``time_blocks`` row. So a write is one
statement whether or not it folds: one trip to the database's thread, all in SQLite's own
code, while the event loop goes on.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import sqlite3
import time
from collections import OrderedDict
from typing import Any, Iterable, Sequence

import aiosqlite

from ..events import EventRecord
from .base import EventQuery
from .filters import SqlDialect, Window, time_window_sql, window_from_row
from .rows import row_patch
from .sqlite_conversations import update_statement
from .sqlite_database import SQLiteDatabase
from .sqlite_text import (
    BEHIND, INDEX_BACKLOG, INDEX_CHUNK, INDEX_QUIET, INDEX_TREES, body_match, index_some_sql, text_branches,
)

log = logging.getLogger(__name__)

TREE = "(SELECT id FROM trees WHERE root_id = {})"
"""The key of the tree whose root id is the parameter ``{}``."""
DIALECT = SqlDialect(
    placeholder=lambda _: "?", tree_match="tree = " + TREE, body_match=body_match, text_branches=text_branches
)
COLUMNS = ("conversation_id", "seq", "id", "kind", "source", "timestamp", "subagent_id", "parent_tool_use_id", "json")
"""An event row's columns after ``tree``, in ``EventRecord``'s field order after ``root_id``
(what is read back); an append writes ``body`` too, its folded text (``sqlite_text.py``)."""
FOLD_AFTER = 1_000
"""Events past a tree's mark before they are folded into its summaries."""

# The events a fold passes: tree NEW.id, from OLD.counted_seq (exclusive) to NEW.counted_seq.
# INDEXED BY: grouping by stream and kind, SQLite would rather read the whole tree in the
# (tree, stream, kind) index than the few rows in the range.
_FOLDED = "FROM events INDEXED BY events_by_seq WHERE tree = {tree} AND seq > {after} AND seq <= {until}"
FOLD = (
    "INSERT INTO event_counts (tree, conversation_id, kind, n) "
    "SELECT tree, conversation_id, kind, count(*) " + _FOLDED + " GROUP BY conversation_id, kind "
    "ON CONFLICT (tree, conversation_id, kind) DO UPDATE SET n = n + excluded.n",
    "INSERT INTO time_blocks (tree, first_seq, last_seq, min_ts, max_ts) "
    "SELECT tree, min(seq), max(seq), min(timestamp), max(timestamp) " + _FOLDED + " GROUP BY tree",
)
"""What a fold adds to the summaries; ``{tree}``, ``{after}``, ``{until}`` name the range."""


def fold_triggers(fold_after: int) -> str:
    """The writer connection's fold triggers (see the module docstring), as one script."""
    body = ";\n    ".join(sql.format(tree="NEW.id", after="OLD.counted_seq", until="NEW.counted_seq") for sql in FOLD)
    return f"""
DROP TRIGGER IF EXISTS temp.fold_when_due;
DROP TRIGGER IF EXISTS temp.fold_passed_events;
CREATE TEMP TRIGGER fold_when_due AFTER INSERT ON main.events
WHEN NEW.seq >= (SELECT counted_seq FROM trees WHERE id = NEW.tree) + {int(fold_after)}
BEGIN
    UPDATE trees SET counted_seq = NEW.seq WHERE id = NEW.tree;
END;
CREATE TEMP TRIGGER fold_passed_events AFTER UPDATE OF counted_seq ON main.trees
WHEN NEW.counted_seq > OLD.counted_seq
BEGIN
    {body};
END;
"""


class SQLiteEventWriter:
    """The ``BatchWriter`` ``GroupCommit`` writes through, and the reads of the summaries."""

    def __init__(self, db: SQLiteDatabase, *, fold_after: int = FOLD_AFTER, max_trees: int = 10_000) -> None:
        if fold_after < 1:
            raise ValueError("fold_after must be at least 1")
        self._db = db
        self._fold_after = fold_after
        self._max_trees = max_trees
        self._keys: OrderedDict[str, int] = OrderedDict()
        self._behind: set[int] | None = None
        """Keys of the trees with events not in the text index yet (``None``: not read yet)."""
        self._unindexed = 0
        """About how many events are behind (counted as written, down as indexed)."""
        self._last_write = 0.0
        self._indexing: asyncio.Task[None] | None = None
        self._backlog_unknown = False
        """Trees were found behind when the store opened: index them whatever the count."""
        self._stopped = False
        self._failing = False
        db.on_writer_connect(self._add_fold_triggers)

    async def _add_fold_triggers(self, conn: aiosqlite.Connection) -> None:
        # Every writer connection gets them: the first, and one reopened after a failure.
        await conn.executescript(fold_triggers(self._fold_after))

    async def last_seq(self, root_id: str) -> int:
        row = await self._db.fetchone("SELECT max(seq) FROM events WHERE tree = " + TREE.format("?"), (root_id,))
        return (row[0] if row else None) or 0

    async def write(self, records: Sequence[EventRecord]) -> None:
        """Store ``records`` in one transaction: one multi-row ``INSERT`` in autocommit (atomic,
        folds included). A tree written for the first time gets its key first, in the same
        transaction."""
        async with self._db.locked(urgent=True) as conn:
            # Read under the lock: a tree deleted meanwhile is no longer cached.
            keys = {record.root_id: self._keys.get(record.root_id) for record in records}
            rows = [update_statement(r.conversation_id, row_patch(r)) for r in records if r.row_update is not None]
            try:
                if None not in keys.values() and not rows:
                    await conn.execute(_insert_rows(len(records)), _values(keys, records))  # type: ignore[arg-type]
                    self._now_behind(keys.values(), len(records))  # type: ignore[arg-type]
                    return
                keys = await _write_in_transaction(conn, keys, records, rows)
            except sqlite3.IntegrityError as exc:
                if "events.id" in str(exc):
                    ids = ", ".join(repr(r.id) for r in records[:3])
                    raise ValueError(f"an event with id {ids} is already stored") from exc
                raise
            for root_id, key in keys.items():  # committed: now they may be cached
                self._keys[root_id] = key  # type: ignore[assignment]
                self._keys.move_to_end(root_id)
            while len(self._keys) > self._max_trees:
                self._keys.popitem(last=False)
            self._now_behind(keys.values(), len(records))  # type: ignore[arg-type]

    def _now_behind(self, trees: Iterable[int], count: int) -> None:
        self._unindexed += count
        self._last_write = time.monotonic()
        if self._behind is not None:  # else read from the database at the next idle moment
            self._behind.update(trees)

    async def idle_work(self) -> bool:
        """Start indexing the events not in the text index yet (``sqlite_text.py``), in a task
        of the store's beside the appends, if it is not running; never waits for it."""
        idle = self._indexing is None or self._indexing.done()
        if idle and not self._stopped and (self._behind is None or self._behind):
            self._indexing = self._db.owned.start(self._index_when_quiet())
        return False

    def stop(self) -> None:
        """Stop indexing after the step in progress (the rest is indexed after a reopen)."""
        self._stopped = True

    async def _index_when_quiet(self) -> None:
        # Each step is a turn of the write lock, and a turn lasts until the busy loop gets
        # round to it: a step after every batch of appends doubled the turns. So while appends
        # keep coming, the index waits until enough is behind to make a step worth its turn
        # (searches read what is behind row by row meanwhile). Batches of events still go
        # first at the lock (``write_lock.py``).
        try:
            while not self._stopped:
                small = not self._backlog_unknown and self._unindexed < INDEX_BACKLOG
                if small and time.monotonic() - self._last_write < INDEX_QUIET:
                    await asyncio.sleep(INDEX_QUIET)
                    continue
                more = await self.index_step()
                self._failing = False
                if not more:
                    return
        except Exception as exc:  # tried again after the next batch; the appends go on
            if not self._failing:
                log.warning("indexing the text of new events failed (tried again later): %r", exc)
            self._failing = True

    async def index_step(self) -> bool:
        """Index up to ``INDEX_CHUNK`` events not in the text index yet, of up to
        ``INDEX_TREES`` trees (``sqlite_text.py``); whether some remain."""
        async with self._db.locked() as conn:
            if self._behind is None:
                self._behind = {row[0] for row in await conn.execute_fetchall(BEHIND)}
                self._backlog_unknown = bool(self._behind)  # from before this connection: any size
            if not self._behind:
                self._unindexed, self._backlog_unknown = 0, False
                return False
            trees = list(itertools.islice(self._behind, INDEX_TREES))
            each = max(1, INDEX_CHUNK // len(trees))
            rows = await conn.execute_fetchall(index_some_sql(len(trees)), (each, *trees))
            caught_up = {row[0] for row in rows if row[2] is None or row[1] >= row[2]}
            self._behind.difference_update(caught_up | (set(trees) - {row[0] for row in rows}))
            self._unindexed = max(0, self._unindexed - each * len(trees))
            if not self._behind:
                self._unindexed, self._backlog_unknown = 0, False
            return bool(self._behind)

    async def delete_tree(self, conn: aiosqlite.Connection, root_id: str) -> None:
        """Delete a tree's events, summaries and key, inside a write transaction
        (``SQLiteDatabase.write``)."""
        for sql in (
            "DELETE FROM events WHERE tree = " + TREE,
            "DELETE FROM event_counts WHERE tree = " + TREE,
            "DELETE FROM time_blocks WHERE tree = " + TREE,
            "DELETE FROM trees WHERE root_id = {}",
        ):
            await conn.execute(sql.format("?"), (root_id,))
        self._keys.pop(root_id, None)

    async def time_window(self, query: EventQuery) -> Window | None:
        """The ``seq`` range that holds every event of ``query``'s time range, from the
        summaries (``filters.time_window_sql``); ``None`` without a time range."""
        built = time_window_sql(query, dialect=DIALECT)
        if built is None:
            return None
        return window_from_row(await self._db.fetchone(*built))


@functools.lru_cache(maxsize=64)
def _insert_rows(count: int) -> str:
    """One ``INSERT`` of ``count`` rows (at most 1000 per batch: 11,000 parameters, under
    SQLite's limit of 32,766)."""
    row = f"({', '.join('?' * (len(COLUMNS) + 2))})"
    return f"INSERT INTO events (tree, {', '.join(COLUMNS)}, body) VALUES " + ", ".join([row] * count)


def _values(keys: dict[str, int], records: Sequence[EventRecord]) -> list[Any]:
    return [
        value
        for r in records
        for value in (keys[r.root_id], r.conversation_id, r.seq, r.id, r.kind, r.source, r.timestamp,
                      r.subagent_id, r.parent_tool_use_id, r.json, r.body or "")
    ]  # fmt: skip


async def _write_in_transaction(
    conn: aiosqlite.Connection, keys: dict[str, int | None], records: Sequence[EventRecord],
    rows: Sequence[tuple[str, list[Any]]],
) -> dict[str, int]:
    """Give the trees of ``keys`` that have none a key, insert ``records`` and run ``rows``
    (the conversation rows that events state: ``EventRecord.row_update``): one transaction in one trip to the
    writer's thread (a burst of new conversations puts hundreds of new trees in one batch;
    trip by trip, the write lock was held for two trips per tree)."""
    new = [root_id for root_id, key in keys.items() if key is None]
    marks = ", ".join("?" * len(new))  # at most 1,000 (a batch's events): under SQLite's limit

    def write() -> dict[str, int]:
        raw: sqlite3.Connection = conn._conn  # aiosqlite's thread owns it: this runs there
        raw.execute("BEGIN IMMEDIATE")
        try:
            found: dict[str, int] = keys  # type: ignore[assignment]
            if new:
                raw.execute(f"INSERT INTO trees (root_id) VALUES {', '.join(['(?)'] * len(new))} "
                            "ON CONFLICT (root_id) DO NOTHING", new)
                made = dict(raw.execute(f"SELECT root_id, id FROM trees WHERE root_id IN ({marks})", new).fetchall())
                found = {root_id: key if key is not None else int(made[root_id]) for root_id, key in keys.items()}
            raw.execute(_insert_rows(len(records)), _values(found, records))
            for sql, params in rows:
                raw.execute(sql, params).fetchall()
            raw.execute("COMMIT")
        except BaseException:
            if raw.in_transaction:
                raw.execute("ROLLBACK")
            raise
        return found

    # aiosqlite has no public way to run a function on its thread; ``_execute`` is how its own
    # methods do it (pinned, 0.22.1; ``sqlite_statements.py`` does the same).
    return await conn._execute(write)
