"""Body text search on PostgreSQL: the folded text column, its ``pg_trgm`` index, and the fill.

Every event row holds ``body``, its folded readable text (``taskwire.events.body_text``), written
at append. A term is looked for with ``LIKE`` (``%``, ``_``, ``\\`` escaped): exact, since
both sides are folded, in Python.

The index is kept as SQLite's is (``sqlite_text.py``), and for the same reason: a GIN index of
trigrams costs an append more than the rest of its work. So the text is copied, a few hundred
events at a time while a replica's writer has no append waiting, into ``event_text``, which
holds the GIN index of ``pg_trgm`` on it; ``text_marks`` says how far each tree is copied
(locked while a replica copies, so two never copy the same events). A search reads
``event_text`` up to the tree's mark and ``events`` past it, in one statement.

``pg_trgm`` ships with PostgreSQL (``contrib``) and is a trusted extension: a user who may
create objects in the database may create it. Where it is missing, search still works, by
reading the rows, and the log says so at each start; the index is made at the next start after
the extension becomes available.

Events stored before the column existed are filled in by ``fill_body_text`` at open, in
batches of their own transactions, resumable, with progress in the log; their index then
catches up like new events'.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import asyncpg

from ..events.body_text import stored_body_text
from .base import EventQuery
from .filters import like_pattern
from .text_fill import FILL_BATCH, FillProgress

log = logging.getLogger(__name__)

MIGRATION = """
ALTER TABLE events ADD COLUMN body TEXT COLLATE "C" NOT NULL DEFAULT '';
CREATE TABLE event_text (
    text_tree BIGINT NOT NULL,
    text_seq BIGINT NOT NULL,
    text_body TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (text_tree, text_seq)
);
CREATE TABLE text_marks (tree BIGINT PRIMARY KEY, seq BIGINT NOT NULL);
CREATE TABLE event_text_fill (tree BIGINT NOT NULL, seq BIGINT NOT NULL);
INSERT INTO event_text_fill (tree, seq) VALUES (0, 0)
"""
"""The schema migration: the column, the copy that is indexed (its columns named apart from
``events``' so a join's conditions need no table names), the marks, and the mark of the fill
(the rows up to ``(tree, seq)`` are filled; the table is dropped once all are). The index
itself is ``ensure_index``'s."""

INDEX_NAME = "event_text_by_body"
INDEX_CHUNK = 500
"""Events copied into the index per step while the writer is idle."""
_BUILD_TIMEOUT = 3600.0  # seconds: building the index over a large copy is one long statement

COMMON = 300
"""A term with at least this many events in a tree's index is read in order, not gathered."""
SAMPLE, SAMPLE_HITS = 1000, 2
"""A term in at least ``SAMPLE_HITS`` of the first ``SAMPLE`` events of a tree's copy (0.2 %)
is common without asking the trigram index, whose count costs a common term more than its page."""
_TREE_ID = "(SELECT id FROM trees WHERE root_id = $1)"
_IS_COMMON = (
    "SELECT (SELECT count(*) FROM (SELECT text_body FROM event_text WHERE text_tree = " + _TREE_ID + " "
    "ORDER BY text_seq LIMIT $3) AS sample WHERE text_body LIKE $2 ESCAPE '\\') >= $4 "
    "OR (SELECT count(*) FROM (SELECT 1 FROM event_text WHERE text_tree = " + _TREE_ID + " "
    "AND text_body LIKE $2 ESCAPE '\\' LIMIT $5) AS hits) >= $5"
)
"""Whether a term is common: the sample first, the index's capped count only if the sample is
not enough (PostgreSQL evaluates the second only when the first is false)."""
_IN_ORDER = "SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off"
TEXT_PLAN = ("enable_seqscan = off", "max_parallel_workers_per_gather = 0", "jit = off")
"""Planner settings of every body search: the mark between the indexed copy and the newest
events is read inside the statement, so the planner cannot know the newest part is small, and
would scan the whole table for it, or start workers to (tens of milliseconds). Its cost of a
large tree's ordered read, a full read before the ``LIMIT`` stops it early, passes JIT's
threshold, and compiling cost 16 ms of a common term's 20 at 1 M events."""

BEHIND = (
    "SELECT t.id FROM trees t LEFT JOIN text_marks m ON m.tree = t.id WHERE t.last_seq > coalesce(m.seq, 0)"
)
"""The trees whose newest events are not in the index yet (read once, at open)."""
_MARK = "INSERT INTO text_marks (tree, seq) VALUES ($1, 0) ON CONFLICT (tree) DO NOTHING"
_INDEX_SOME = """
WITH mark AS (SELECT seq FROM text_marks WHERE tree = $1 FOR UPDATE),
taken AS (
    SELECT seq, body FROM events WHERE tree = $1 AND seq > (SELECT seq FROM mark) ORDER BY seq LIMIT $2
),
copied AS (
    INSERT INTO event_text (text_tree, text_seq, text_body) SELECT $1, seq, body FROM taken WHERE body <> ''
    ON CONFLICT DO NOTHING
),
moved AS (
    UPDATE text_marks SET seq = greatest(seq, (SELECT max(seq) FROM taken)) WHERE tree = $1 AND EXISTS (SELECT 1 FROM taken)
)
SELECT count(*) FROM taken
"""


def body_match(p: Callable[[Any], str], term: str) -> str:
    """The row's folded text holds ``term``."""
    return f"body LIKE {p(like_pattern(term))} ESCAPE '\\'"


def text_branches(p: Callable[[Any], str], query: EventQuery, term: str, bounds: tuple[int | None, int | None]) -> list[Any]:
    """``filters.TextBranches`` for ``event_text``: the indexed copy up to the tree's mark,
    each match joined to its event, then the events past the mark."""
    lower, upper = bounds

    def tree() -> str:
        return f"(SELECT id FROM trees WHERE root_id = {p(query.root_id)})"

    def mark() -> str:
        return f"coalesce((SELECT seq FROM text_marks WHERE tree = {tree()}), 0)"

    def indexed() -> str:
        parts = [f"text_tree = {tree()}", f"text_seq <= {mark()}", f"text_body LIKE {p(like_pattern(term))} ESCAPE '\\'"]
        if lower is not None:
            parts.append(f"text_seq > {p(lower)}")
        if upper is not None:
            parts.append(f"text_seq <= {p(upper)}")
        return " AND ".join(parts)

    def newest() -> str:
        return f"seq > {mark()} AND {body_match(p, term)}"

    joined = "event_text JOIN events ON tree = text_tree AND seq = text_seq"
    return [(joined, indexed, "text_seq"), ("events", newest, "seq")]


async def text_search(conn: asyncpg.Connection, root_id: str, term: str, sql: str, params: list[Any]) -> list[Any]:
    """Run a body search's ``sql`` (inside ``PostgresPool.read_planned``). PostgreSQL takes any
    long term for a rare one and gathers all its matches from the trigram index, then sorts
    them: for a common term, a page is found sooner by reading the tree's copy in ``seq``
    order until it is full. The plan changes, never the rows: a term seen often in the first
    events of the copy is common; otherwise a capped count in the index tells them apart."""
    if await _is_common(conn, root_id, like_pattern(term)):
        await conn.execute(_IN_ORDER)
    return await conn.fetch(sql, *params)


async def _is_common(conn: asyncpg.Connection, root_id: str, pattern: str) -> bool:
    # The sample reads a few hundred microseconds of rows; the index's count gathers every
    # match in the tree (about 4 ms for 10,000 of them), cheap only for a rare term.
    return await conn.fetchval(_IS_COMMON, root_id, pattern, SAMPLE, SAMPLE_HITS, COMMON)


async def index_some(conn: asyncpg.Connection, tree: int) -> bool:
    """Copy up to ``INDEX_CHUNK`` more events of ``tree`` into the index (inside the caller's
    transaction); whether the tree is caught up."""
    await conn.execute(_MARK, tree)
    return await conn.fetchval(_INDEX_SOME, tree, INDEX_CHUNK) < INDEX_CHUNK


async def fill_body_text(conn: asyncpg.Connection, *, where: str, batch: int = FILL_BATCH) -> None:
    """Fill in ``body`` of the events stored before it existed, ``batch`` events a
    transaction, logging progress; a restart goes on where it stopped. Does nothing once done."""
    if await conn.fetchval("SELECT to_regclass('event_text_fill')") is None:
        return
    mark = await conn.fetchrow("SELECT tree, seq FROM event_text_fill")
    after = (mark["tree"], mark["seq"])
    total = await conn.fetchval("SELECT count(*) FROM events WHERE (tree, seq) > ($1, $2)", *after)
    progress = FillProgress(where, total)
    while True:
        rows = await conn.fetch(
            "SELECT tree, seq, json FROM events WHERE (tree, seq) > ($1, $2) ORDER BY tree, seq LIMIT $3", *after, batch
        )
        if not rows:
            break
        bodies = [(row["tree"], row["seq"], stored_body_text(row["json"])) for row in rows]
        after = (rows[-1]["tree"], rows[-1]["seq"])
        async with conn.transaction():
            await conn.execute(
                "UPDATE events AS e SET body = v.body FROM unnest($1::bigint[], $2::bigint[], $3::text[]) "
                "AS v(tree, seq, body) WHERE e.tree = v.tree AND e.seq = v.seq AND v.body <> ''",
                [b[0] for b in bodies], [b[1] for b in bodies], [b[2] for b in bodies],
            )
            await conn.execute("UPDATE event_text_fill SET tree = $1, seq = $2", *after)
        progress.add(len(rows))
    await conn.execute("DROP TABLE event_text_fill")
    progress.done()


async def ensure_index(conn: asyncpg.Connection, *, where: str) -> bool:
    """Make the trigram index on ``body`` if it is missing (creating ``pg_trgm`` if need be);
    whether the index is there. Without the extension it logs why search reads the rows."""
    if await conn.fetchval("SELECT to_regclass($1)", INDEX_NAME) is not None:
        return True
    extension = await _trgm_schema(conn)
    if extension is None:
        try:
            async with conn.transaction():
                await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        except asyncpg.PostgresError as exc:
            log.warning(
                "body search in %s is not indexed: the PostgreSQL extension pg_trgm could not be "
                "created (%s: %s). Install PostgreSQL's contrib package or run CREATE EXTENSION "
                "pg_trgm as a superuser, then restart; until then a body search reads the rows",
                where, type(exc).__name__, exc,
            )
            return False
        extension = await _trgm_schema(conn)
    count = await conn.fetchval("SELECT count(*) FROM event_text")
    if count > 100_000:
        log.info("building the body search index over %d events in %s (once)", count, where)
    await conn.execute(
        f'CREATE INDEX IF NOT EXISTS {INDEX_NAME} ON event_text USING gin (text_body "{extension}".gin_trgm_ops) '
        "WITH (fastupdate = off)",
        timeout=_BUILD_TIMEOUT,
    )
    return True


async def _trgm_schema(conn: asyncpg.Connection) -> str | None:
    """The schema ``pg_trgm`` is installed in (its operator class is named through it), if any."""
    return await conn.fetchval(
        "SELECT n.nspname FROM pg_extension x JOIN pg_namespace n ON n.oid = x.extnamespace WHERE x.extname = 'pg_trgm'"
    )
