"""Body text search on PostgreSQL: the folded text column, its ``pg_trgm`` index, and the fill.

Every event row holds ``body``, its folded readable text (``server.events.body_text``), written
at append. A term is looked for with ``LIKE`` on ``body`` (``%``, ``_``, ``\\`` escaped): exact,
since both sides are folded, in Python. A GIN index of ``pg_trgm`` trigrams on ``body`` finds
the rows of a term of three characters or more without reading the others; PostgreSQL's
planner picks it, or the ``seq`` index when the term is common and a page fills at once.

``pg_trgm`` ships with PostgreSQL (``contrib``) and is a trusted extension: a user who may
create objects in the database may create it. Where it is missing, search still works, by
reading the rows, and the log says so once at each start; the index is made at the next
start after the extension becomes available.

Events stored before the column existed are filled in by ``fill_body_text`` at open, in
batches of their own transactions, resumable, with progress in the log; the index is built
after the fill (building it once is far cheaper than keeping it through a million updates).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import asyncpg

from server.events.body_text import stored_body_text
from server.store.filters import like_pattern
from server.store.text_fill import FILL_BATCH, FillProgress

log = logging.getLogger(__name__)

MIGRATION = """
ALTER TABLE events ADD COLUMN body TEXT COLLATE "C" NOT NULL DEFAULT '';
CREATE TABLE event_text_fill (tree BIGINT NOT NULL, seq BIGINT NOT NULL);
INSERT INTO event_text_fill (tree, seq) VALUES (0, 0)
"""
"""The schema migration: the column and the mark of the fill (the rows up to ``(tree, seq)``
are filled; the table is dropped once all are). The index is ``ensure_index``'s."""

INDEX_NAME = "events_by_body"
_BUILD_TIMEOUT = 3600.0  # seconds: building the index over a large log is one long statement


def body_match(p: Callable[[Any], str], term: str) -> str:
    """The row's folded text holds ``term`` (the trigram index serves it)."""
    return f"body LIKE {p(like_pattern(term))} ESCAPE '\\'"


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
    count = await conn.fetchval("SELECT count(*) FROM events")
    if count > 100_000:
        log.warning("building the body search index over %d events in %s (once)", count, where)
    await conn.execute(
        f'CREATE INDEX IF NOT EXISTS {INDEX_NAME} ON events USING gin (body "{extension}".gin_trgm_ops)',
        timeout=_BUILD_TIMEOUT,
    )
    return True


async def _trgm_schema(conn: asyncpg.Connection) -> str | None:
    """The schema ``pg_trgm`` is installed in (its operator class is named through it), if any."""
    return await conn.fetchval(
        "SELECT n.nspname FROM pg_extension x JOIN pg_namespace n ON n.oid = x.extnamespace WHERE x.extname = 'pg_trgm'"
    )
