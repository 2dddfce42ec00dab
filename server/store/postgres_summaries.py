"""The summaries of a PostgreSQL log, kept like SQLite's (``sqlite_writer.py``).

Once a tree has ``FOLD_AFTER`` events past its mark (``trees.counted_seq``), the append
transaction that gets it there adds them to ``event_counts`` (per stream and kind: filtered
counts read these, ``filters.counted_sql``) and to one ``time_blocks`` row (their ``seq`` and
time range: a time-range search reads only the ``seq`` window its blocks point to), and moves
the mark to the end. The tree's counter row is locked by that transaction, so the summaries of
one tree are folded by one writer at a time, whichever replica it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import asyncpg

from .base import EventQuery
from .filters import SqlDialect, Window, time_window_sql, window_from_row

if TYPE_CHECKING:
    from .postgres_pool import PostgresPool

FOLD_AFTER = 1_000
"""Events past a tree's mark before they are folded into its summaries."""

_PAST_MARK = "tree = $1 AND seq > $2"
_FOLD = (
    "INSERT INTO event_counts (tree, conversation_id, kind, n) "
    f"SELECT tree, conversation_id, kind, count(*) FROM events WHERE {_PAST_MARK} "
    "GROUP BY tree, conversation_id, kind "
    "ON CONFLICT (tree, conversation_id, kind) DO UPDATE SET n = event_counts.n + EXCLUDED.n",
    "INSERT INTO time_blocks (tree, first_seq, last_seq, min_ts, max_ts) "
    f"SELECT tree, min(seq), max(seq), min(timestamp), max(timestamp) FROM events WHERE {_PAST_MARK} "
    "GROUP BY tree",
)
_TABLES = ("event_counts", "time_blocks")


async def fold(conn: asyncpg.Connection, tree: int, counted_seq: int, last_seq: int) -> None:
    """Inside the append transaction: fold the events after ``counted_seq`` (through
    ``last_seq``) into the summaries and move the mark."""
    for sql in _FOLD:
        await conn.execute(sql, tree, counted_seq)
    await conn.execute("UPDATE trees SET counted_seq = $2 WHERE id = $1", tree, last_seq)


async def delete_summaries(conn: asyncpg.Connection, root_id: str) -> None:
    for table in _TABLES:
        await conn.execute(f"DELETE FROM {table} WHERE tree = (SELECT id FROM trees WHERE root_id = $1)", root_id)


async def counted(pool: PostgresPool, query: EventQuery) -> tuple[int, int]:
    """The tree's mark and the events up to it that ``query`` (streams and kinds only) counts.

    Read together, in one statement; the caller counts the events past the mark with the mark
    as a parameter: a bound the planner sees, so it reads the index from there (a bound from a
    sub-select it cannot see, and it may read the whole table)."""
    params: list[object] = [query.root_id]
    where = ["tree = t.id"]
    for column, values in (("conversation_id", query.conversation_ids), ("kind", query.kinds)):
        if values is not None:
            params.append(list(values))
            where.append(f"{column} = ANY(${len(params)}::text[])")
    row = await pool.fetchrow(
        f"SELECT t.counted_seq, (SELECT coalesce(sum(n), 0) FROM event_counts WHERE {' AND '.join(where)}) "
        "FROM trees t WHERE t.root_id = $1",
        *params,
    )
    return (row[0], row[1]) if row is not None else (0, 0)


async def time_window(pool: PostgresPool, query: EventQuery, dialect: SqlDialect) -> Window | None:
    """The ``seq`` range that holds every event of ``query``'s time range, from the
    summaries (``filters.time_window_sql``); ``None`` without a time range."""
    built = time_window_sql(query, dialect=dialect)
    if built is None:
        return None
    sql, params = built
    return window_from_row(await pool.fetchrow(sql, *params))
