"""Body text search on SQLite: the folded text column, its FTS5 trigram index, and the fill.

Every event row holds ``body``, its folded readable text (``server.events.body_text``), written
at append. ``event_text`` is a contentless FTS5 table over it with the ``trigram`` tokenizer
(SQLite 3.34 or newer), which answers any substring of three characters or more: a term is
one quoted phrase of its trigrams, so ``"``, ``*``, ``-``, ``OR`` are plain characters. The
text is folded before it is indexed, so the tokenizer is told to keep case (``case_sensitive
1``) and both sides fold one way, Python's.

An index row's rowid is the event's tree key and ``seq`` in one integer (``tree << 36 | seq``):
a tree's rows are one rowid range, in ``seq`` order, so a search walks the index in the order
of the page it returns, limited to its tree and ``seq`` bounds, and stops when the page is
full. Triggers of the schema keep the index in step with ``events`` inside the statement that
writes them (an append's ``INSERT``, a tree's ``DELETE``), so no writer can forget it. Shorter
terms are looked for in ``body`` row by row (``instr``).

Events stored before the column existed are filled in by ``fill_body_text`` at open, in
batches of their own transactions, resumable, with progress in the log.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

import aiosqlite

from server.events.body_text import stored_body_text
from server.store.base import EventQuery
from server.store.text_fill import FILL_BATCH, FillProgress

TREE_SHIFT = 36
"""Bits of ``seq`` in an index rowid: up to 2**36 (68 billion) events a tree, 2**27 trees."""
MIN_SQLITE = (3, 34, 0)
"""The first SQLite with the ``trigram`` tokenizer."""

MIGRATION = f"""
ALTER TABLE events ADD COLUMN body TEXT NOT NULL DEFAULT '';
CREATE VIRTUAL TABLE event_text USING fts5(
    body, content='', columnsize=0, tokenize='trigram case_sensitive 1'
);
CREATE TRIGGER event_text_insert AFTER INSERT ON events WHEN NEW.body <> '' BEGIN
    INSERT INTO event_text (rowid, body) VALUES ((NEW.tree << {TREE_SHIFT}) + NEW.seq, NEW.body);
END;
CREATE TRIGGER event_text_delete AFTER DELETE ON events WHEN OLD.body <> '' BEGIN
    INSERT INTO event_text (event_text, rowid, body)
    VALUES ('delete', (OLD.tree << {TREE_SHIFT}) + OLD.seq, OLD.body);
END;
CREATE TRIGGER event_text_update AFTER UPDATE OF body ON events BEGIN
    INSERT INTO event_text (event_text, rowid, body)
    SELECT 'delete', (OLD.tree << {TREE_SHIFT}) + OLD.seq, OLD.body WHERE OLD.body <> '';
    INSERT INTO event_text (rowid, body)
    SELECT (NEW.tree << {TREE_SHIFT}) + NEW.seq, NEW.body WHERE NEW.body <> '';
END;
CREATE TABLE event_text_fill (after_rowid INTEGER NOT NULL);
INSERT INTO event_text_fill (after_rowid) VALUES (0)
"""
"""The schema migration: the column, the index, its triggers, and the mark of the fill (the
rows up to ``after_rowid`` are filled; the table is dropped once all are)."""


def body_match(p: Callable[[Any], str], term: str) -> str:
    """A short term, looked for in the row's folded text (exact: both sides are folded)."""
    return f"instr(body, {p(term)}) > 0"


def text_join(p: Callable[[Any], str], query: EventQuery, term: str, bounds: tuple[int | None, int | None]) -> tuple[str, str, str]:
    """``filters.TextJoin`` for ``event_text``: the index drives (``CROSS JOIN`` keeps it the
    outer loop), narrowed to the tree's rowid range and the ``seq`` bounds, each match joined
    to its event by (tree, seq)."""
    lower, upper = bounds
    last = (1 << TREE_SHIFT) - 1

    def tree() -> str:  # each use its own parameter: SQLite's are positional
        return f"(SELECT id FROM trees WHERE root_id = {p(query.root_id)})"

    phrase = '"' + term.replace('"', '""') + '"'  # one phrase: every character literal
    ties = [
        f"event_text MATCH {p(phrase)}",
        f"f.rowid > ({tree()} << {TREE_SHIFT}) + {p(max(lower or 0, 0))}",
        f"f.rowid <= ({tree()} << {TREE_SHIFT}) + {p(last if upper is None else min(upper, last))}",
        f"e.tree = f.rowid >> {TREE_SHIFT}",
        f"e.seq = f.rowid & {last}",
    ]
    return "event_text AS f CROSS JOIN events AS e", " AND ".join(ties), "f.rowid"


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
