"""Body text search on SQLite: the folded text column, its FTS5 trigram index, and the fill.

Every event row holds ``body``, its folded readable text (``taskwire.events.body_text``), written
at append. ``event_text`` is a contentless FTS5 table over it with the ``trigram`` tokenizer
(SQLite 3.34 or newer), which finds the rows holding every trigram of a term of three
characters or more; ``instr`` on ``body`` then keeps those that hold the term itself. Each
trigram is quoted in the query, so ``"``, ``*``, ``-``, ``OR`` are plain characters. The text
is folded before it is indexed, so the tokenizer keeps case (``case_sensitive 1``): both sides
fold one way, Python's. Only which rows hold a trigram is kept (``detail=none``), not where.

An index row's rowid is the event's tree key and ``seq`` in one integer (``tree << 36 | seq``):
a tree's rows are one rowid range, in ``seq`` order, so a search walks the index in the order
of the page it returns, limited to its tree and ``seq`` bounds, and stops when the page is
full.

Indexing a row's text costs several times what storing the row does (every character is a
trigram), so it is kept off the append's path: an append stores ``body``, and a task of the
store's indexes what is new beside the appends (``SQLiteEventWriter.idle_work``), once
``INDEX_BACKLOG`` events are behind or appends pause, a few trees at a time, up to
``trees.text_seq``. Moving that mark is one statement whose trigger indexes the rows it passes
(as the summaries' fold does). A search reads the index up to the mark and the rows past it
(``instr``, a few hundred at most), in one statement, so it always sees every stored
event. Shorter terms are looked for in ``body`` row by row. A tree's ``DELETE`` takes its
indexed rows out of the index by a trigger, in the same statement.

Events stored before the column existed are filled in by ``fill_body_text`` at open, in
batches of their own transactions, resumable, with progress in the log; the index then
catches up with them like with new events.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Callable

import aiosqlite

from ..events.body_text import stored_body_text
from .base import EventQuery
from .text_fill import FILL_BATCH, FillProgress

TREE_SHIFT = 36
"""Bits of ``seq`` in an index rowid: up to 2**36 (68 billion) events a tree, 2**27 trees."""
_LAST = (1 << TREE_SHIFT) - 1
MIN_SQLITE = (3, 35, 0)
"""The trigram tokenizer (3.34) and ``RETURNING`` (3.35)."""
INDEX_CHUNK = 64
"""Events indexed per step, shared by the step's trees (a few milliseconds: a batch of events
arriving meanwhile waits at most that long)."""

MIGRATION = f"""
ALTER TABLE events ADD COLUMN body TEXT NOT NULL DEFAULT '';
ALTER TABLE trees ADD COLUMN text_seq INTEGER NOT NULL DEFAULT 0;
CREATE VIRTUAL TABLE event_text USING fts5(
    body, content='', columnsize=0, detail=none, tokenize='trigram case_sensitive 1'
);
CREATE TRIGGER event_text_index AFTER UPDATE OF text_seq ON trees WHEN NEW.text_seq > OLD.text_seq BEGIN
    INSERT INTO event_text (rowid, body)
    SELECT (tree << {TREE_SHIFT}) + seq, body FROM events INDEXED BY events_by_seq
    WHERE tree = NEW.id AND seq > OLD.text_seq AND seq <= NEW.text_seq AND body <> '';
END;
CREATE TRIGGER event_text_delete AFTER DELETE ON events
WHEN OLD.body <> '' AND OLD.seq <= (SELECT text_seq FROM trees WHERE id = OLD.tree) BEGIN
    INSERT INTO event_text (event_text, rowid, body)
    VALUES ('delete', (OLD.tree << {TREE_SHIFT}) + OLD.seq, OLD.body);
END;
CREATE TABLE event_text_fill (after_rowid INTEGER NOT NULL);
INSERT INTO event_text_fill (after_rowid) VALUES (0)
"""
"""The schema migration: the column, the index's mark per tree (``trees.text_seq``), the
index and its triggers, and the mark of the fill (the rows up to ``after_rowid`` are filled;
the table is dropped once all are)."""

INDEX_BACKLOG = 512
"""Events behind the text index that make a step worth a turn of the write lock while appends
keep coming (a search reads that many at most row by row)."""
INDEX_QUIET = 0.2
"""Seconds without an append after which whatever is behind is indexed."""
INDEX_TREES = 8
"""Trees indexed per step at most: a server running many trees has many a few events behind,
and a step each cost a trip to the database and a turn of the write lock."""


@functools.lru_cache(maxsize=INDEX_TREES)
def index_some_sql(trees: int) -> str:
    """Index more events of ``trees`` trees (parameters: the events a tree may take, then the
    trees' keys); gives each tree's key, new mark and last ``seq``."""
    return f"""
UPDATE trees SET text_seq = coalesce(
    (SELECT max(seq) FROM (SELECT seq FROM events WHERE tree = trees.id AND seq > trees.text_seq ORDER BY seq LIMIT ?)),
    text_seq)
WHERE id IN ({", ".join("?" * trees)}) RETURNING id, text_seq, (SELECT max(seq) FROM events WHERE tree = trees.id)
"""


BEHIND = "SELECT id FROM trees WHERE text_seq < (SELECT coalesce(max(seq), 0) FROM events WHERE tree = trees.id)"
"""The trees whose newest events are not indexed yet (read once, at open)."""


def body_match(p: Callable[[Any], str], term: str) -> str:
    """A term looked for in the row's folded text (exact: both sides are folded)."""
    return f"instr(body, {p(term)}) > 0"


def match_expression(term: str) -> str:
    """The FTS5 query for rows holding every trigram of ``term``, each quoted (``"`` doubled)
    so no character is an operator."""
    grams = sorted({term[i : i + 3] for i in range(len(term) - 2)})
    return " AND ".join('"' + gram.replace('"', '""') + '"' for gram in grams)


def text_branches(p: Callable[[Any], str], query: EventQuery, term: str, bounds: tuple[int | None, int | None]) -> list[Any]:
    """``filters.TextBranches`` for ``event_text``: the index up to the tree's mark (it drives:
    ``CROSS JOIN`` keeps it the outer loop; each candidate joined to its event by (tree, seq)
    and checked with ``instr``), then the rows past the mark, read in ``seq`` order."""
    lower, upper = bounds

    def tree() -> str:  # each use its own parameter: SQLite's are positional
        return f"(SELECT id FROM trees WHERE root_id = {p(query.root_id)})"

    def mark() -> str:
        return f"(SELECT text_seq FROM trees WHERE root_id = {p(query.root_id)})"

    def indexed() -> str:
        return " AND ".join([
            f"event_text MATCH {p(match_expression(term))}",
            f"f.rowid > ({tree()} << {TREE_SHIFT}) + {p(max(lower or 0, 0))}",
            f"f.rowid <= ({tree()} << {TREE_SHIFT}) + min({p(_LAST if upper is None else min(upper, _LAST))}, {mark()})",
            f"e.tree = f.rowid >> {TREE_SHIFT}",
            f"e.seq = f.rowid & {_LAST}",
            f"instr(e.body, {p(term)}) > 0",
        ])  # fmt: skip

    def newest() -> str:
        return f"seq > {mark()} AND instr(body, {p(term)}) > 0"

    return [("event_text AS f CROSS JOIN events AS e", indexed, "f.rowid"), ("events", newest, "seq")]


def check_version(version: str) -> None:
    """Refuse a SQLite without the trigram tokenizer, saying which one is needed."""
    found = tuple(int(part) for part in version.split(".")[:3])
    if found < MIN_SQLITE:
        raise RuntimeError(
            f"SQLite {version} has no FTS5 trigram tokenizer, which body search needs: "
            f"use a Python built with SQLite {'.'.join(map(str, MIN_SQLITE))} or newer"
        )


async def fill_body_text(conn: aiosqlite.Connection, *, where: str, batch: int = FILL_BATCH) -> None:
    """Fill in ``body`` (and so the index) of the events stored before it existed, in
    transactions of ``batch`` events, logging progress; a restart goes on where it stopped.
    Does nothing once done (the mark's table is gone)."""
    rows = await _fetch(conn, "SELECT name FROM sqlite_master WHERE name = 'event_text_fill'")
    if not rows:
        return
    after = (await _fetch(conn, "SELECT after_rowid FROM event_text_fill"))[0][0]
    total = (await _fetch(conn, "SELECT count(*) FROM events WHERE rowid > ?", (after,)))[0][0]
    progress = FillProgress(where, total)
    while True:
        found = await _fetch(conn, "SELECT rowid, json FROM events WHERE rowid > ? ORDER BY rowid LIMIT ?", (after, batch))
        if not found:
            break
        bodies = []
        for count, (rowid, json_text) in enumerate(found, start=1):
            bodies.append((stored_body_text(json_text), rowid))
            if count % 500 == 0:
                await asyncio.sleep(0)  # the loop goes on between slices
        after = found[-1][0]
        await conn.execute("BEGIN IMMEDIATE")
        try:
            await conn.executemany("UPDATE events SET body = ? WHERE rowid = ? AND body = ''", [b for b in bodies if b[0]])
            await conn.execute("UPDATE event_text_fill SET after_rowid = ?", (after,))
            await conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                await conn.execute("ROLLBACK")
            raise
        progress.add(len(found))
    await conn.execute("DROP TABLE event_text_fill")
    progress.done()


async def _fetch(conn: aiosqlite.Connection, sql: str, params: Any = ()) -> list[Any]:
    return list(await conn.execute_fetchall(sql, params))
