"""How the SQLite store writes: batches of events, tree keys, and the summaries of the log.

Everything that writes runs on the writer connection under the database's write lock. A
tree's key (``trees.id``) and its summary mark are cached only once committed, so a rolled
back or deleted tree is never written to under a stale key.

Summaries (``sqlite_schema.py``): once a tree has ``fold_after`` events past its mark
(``trees.counted_seq``), the write that gets it there also adds them to ``event_counts`` and
to one new ``time_blocks`` row, and moves the mark to the end.
"""

from __future__ import annotations

import functools
import sqlite3
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

import aiosqlite

from server.events import EventRecord
from server.store.base import EventQuery
from server.store.rows import timestamp_text
from server.store.sqlite_database import SQLiteDatabase, transaction

TREE = "(SELECT id FROM trees WHERE root_id = {})"
"""The key of the tree whose root id is the parameter ``{}``."""
COLUMNS = ("conversation_id", "seq", "id", "kind", "source", "timestamp", "subagent_id", "parent_tool_use_id", "json")
"""An event row's columns after ``tree``, in ``EventRecord``'s field order after ``root_id``."""
FOLD_AFTER = 1_000
"""Events past a tree's mark before they are folded into its summaries."""

_INSERT = f"INSERT INTO events (tree, {', '.join(COLUMNS)}) VALUES ({', '.join('?' * (len(COLUMNS) + 1))})"
_PAST_MARK = "tree = ?1 AND seq > (SELECT counted_seq FROM trees WHERE id = ?1)"
# INDEXED BY: grouping by stream and kind, SQLite would rather read the whole tree in the
# (tree, stream, kind) index than the few rows past the mark.
FOLD = (
    "INSERT INTO event_counts (tree, conversation_id, kind, n) "
    f"SELECT tree, conversation_id, kind, count(*) FROM events INDEXED BY events_by_seq WHERE {_PAST_MARK} "
    "GROUP BY conversation_id, kind "
    "ON CONFLICT (tree, conversation_id, kind) DO UPDATE SET n = n + excluded.n",
    "INSERT INTO time_blocks (tree, first_seq, last_seq, min_ts, max_ts) "
    f"SELECT tree, min(seq), max(seq), min(timestamp), max(timestamp) FROM events INDEXED BY events_by_seq "
    f"WHERE {_PAST_MARK} "
    "GROUP BY tree",
)
"""Adds the events past a tree's mark (parameter 1: the tree key) to its summaries."""
_MARK = "UPDATE trees SET counted_seq = (SELECT max(seq) FROM events WHERE tree = ?1) WHERE id = ?1 RETURNING counted_seq"


@dataclass(slots=True)
class _Tree:
    key: int
    counted_seq: int


class SQLiteEventWriter:
    """The ``BatchWriter`` ``GroupCommit`` writes through, and the reads of the summaries."""

    def __init__(self, db: SQLiteDatabase, *, fold_after: int = FOLD_AFTER, max_trees: int = 10_000) -> None:
        self._db = db
        self._fold_after = fold_after
        self._max_trees = max_trees
        self._trees: OrderedDict[str, _Tree] = OrderedDict()

    async def last_seq(self, root_id: str) -> int:
        row = await self._db.fetchone("SELECT max(seq) FROM events WHERE tree = " + TREE.format("?"), (root_id,))
        return (row[0] if row else None) or 0

    async def write(self, records: Sequence[EventRecord]) -> None:
        """Store ``records`` in one transaction. When every tree is known and none reaches its
        fold, that is one multi-row ``INSERT`` in autocommit: atomic, and one trip to the
        database's thread instead of three (``BEGIN``, the rows, ``COMMIT``)."""
        async with self._db.locked() as conn:
            # Read under the lock: a tree deleted meanwhile is no longer cached.
            trees = {record.root_id: self._trees.get(record.root_id) for record in records}
            last = {record.root_id: record.seq or 0 for record in records}
            try:
                known = [tree for tree in trees.values() if tree is not None]
                if len(known) == len(trees) and not any(self._folds(t, last[r]) for r, t in trees.items() if t):
                    values = [v for r in records for v in _row(trees[r.root_id].key, r)]  # type: ignore[union-attr]
                    await conn.execute(_insert_rows(len(records)), values)
                    return
                async with transaction(conn):
                    found = {root_id: tree or await _tree(conn, root_id) for root_id, tree in trees.items()}
                    await conn.executemany(_INSERT, [_row(found[r.root_id].key, r) for r in records])
                    for root_id, tree in found.items():
                        if self._folds(tree, last[root_id]):
                            found[root_id] = _Tree(tree.key, await _fold(conn, tree.key))
            except sqlite3.IntegrityError as exc:
                if "events.id" in str(exc):
                    ids = ", ".join(repr(r.id) for r in records[:3])
                    raise ValueError(f"an event with id {ids} is already stored") from exc
                raise
            for root_id, tree in found.items():  # committed: now they may be cached
                self._trees[root_id] = tree
                self._trees.move_to_end(root_id)
            while len(self._trees) > self._max_trees:
                self._trees.popitem(last=False)

    def _folds(self, tree: _Tree, last_seq: int) -> bool:
        return last_seq - tree.counted_seq >= self._fold_after

    async def delete_tree(self, conn: aiosqlite.Connection, root_id: str) -> None:
        """Delete a tree's events, summaries and key, inside the caller's write transaction."""
        for sql in (
            "DELETE FROM events WHERE tree = " + TREE,
            "DELETE FROM event_counts WHERE tree = " + TREE,
            "DELETE FROM time_blocks WHERE tree = " + TREE,
            "DELETE FROM trees WHERE root_id = {}",
        ):
            await conn.execute(sql.format("?"), (root_id,))
        self._trees.pop(root_id, None)

    async def time_window(self, query: EventQuery) -> tuple[int, int]:
        """The ``seq`` range, as (exclusive lower, inclusive upper), that holds every event of
        ``query``'s time range: from the first summarized block that overlaps it to the last,
        or to the last matching event past the mark. ``(0, 0)`` when nothing matches."""
        params = {"root": query.root_id}
        blocks = ["tree = (SELECT id FROM t)"]
        events = ["tree = (SELECT id FROM t)", "seq > (SELECT counted_seq FROM t)"]
        if query.timestamp_gte is not None:
            params["gte"] = timestamp_text(query.timestamp_gte)
            blocks.append("max_ts >= :gte")
            events.append("timestamp >= :gte")
        if query.timestamp_lt is not None:
            params["lt"] = timestamp_text(query.timestamp_lt)
            blocks.append("min_ts < :lt")
            events.append("timestamp < :lt")
        in_blocks, in_tail = " AND ".join(blocks), " AND ".join(events)
        sql = (
            "WITH t AS (SELECT id, counted_seq FROM trees WHERE root_id = :root) SELECT "
            f"(SELECT min(first_seq) FROM time_blocks WHERE {in_blocks}), "
            f"(SELECT max(last_seq) FROM time_blocks WHERE {in_blocks}), "
            f"(SELECT min(seq) FROM events WHERE {in_tail}), "
            f"(SELECT max(seq) FROM events WHERE {in_tail})"
        )
        row = await self._db.fetchone(sql, params)
        first_block, last_block, first_tail, last_tail = row or (None, None, None, None)
        first = first_block if first_block is not None else first_tail
        last = last_tail if last_tail is not None else last_block
        if first is None or last is None:
            return 0, 0
        return first - 1, last


@functools.lru_cache(maxsize=64)
def _insert_rows(count: int) -> str:
    """One ``INSERT`` of ``count`` rows (at most 1000 per batch: 10,000 parameters, under
    SQLite's limit of 32,766)."""
    row = f"({', '.join('?' * (len(COLUMNS) + 1))})"
    return f"INSERT INTO events (tree, {', '.join(COLUMNS)}) VALUES " + ", ".join([row] * count)


def _row(key: int, r: EventRecord) -> tuple[Any, ...]:
    return (key, r.conversation_id, r.seq, r.id, r.kind, r.source, r.timestamp, r.subagent_id, r.parent_tool_use_id, r.json)


async def _tree(conn: aiosqlite.Connection, root_id: str) -> _Tree:
    await conn.execute("INSERT INTO trees (root_id) VALUES (?) ON CONFLICT (root_id) DO NOTHING", (root_id,))
    rows = list(await conn.execute_fetchall("SELECT id, counted_seq FROM trees WHERE root_id = ?", (root_id,)))
    return _Tree(key=rows[0][0], counted_seq=rows[0][1])


async def _fold(conn: aiosqlite.Connection, key: int) -> int:
    for sql in FOLD:
        await conn.execute(sql, (key,))
    rows = list(await conn.execute_fetchall(_MARK, (key,)))
    return rows[0][0] or 0
