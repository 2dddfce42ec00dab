"""The PostgreSQL schema, its migrations, and the connection pool.

The tables mirror SQLite's (``sqlite_schema.py``), with the same event indexes
(``schema.EVENT_INDEXES``) and summaries (``event_counts``, ``time_blocks`` up to
``trees.counted_seq``), so ``filters.py`` makes the same SQL for both. What PostgreSQL adds is
for several writers: ``trees.last_seq`` is the tree's ``seq`` counter, advanced inside each
append transaction (its row lock orders the commits of one tree), and ``leases`` records which
replica runs a conversation (``store/leases.py``).

Text columns that are compared or sorted use the ``C`` collation: byte order, as in SQLite, and
cheaper comparisons. Each index starts with the tree and ends with ``seq``, so a filtered search
reads its page in ``seq`` order and stops.

The database's schema follows the connection's ``search_path``; a URL may pick one with
``?search_path=name`` (asyncpg passes query parameters as server settings).
"""

from __future__ import annotations

import asyncpg

from . import postgres_text
from .schema import EVENT_INDEXES, pending_migrations

_V1 = """
CREATE TABLE trees (
    id BIGSERIAL PRIMARY KEY,
    root_id TEXT COLLATE "C" NOT NULL UNIQUE,
    last_seq BIGINT NOT NULL DEFAULT 0,
    counted_seq BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE event_counts (
    tree BIGINT NOT NULL,
    conversation_id TEXT COLLATE "C" NOT NULL,
    kind TEXT COLLATE "C" NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tree, conversation_id, kind)
);
CREATE TABLE time_blocks (
    tree BIGINT NOT NULL,
    first_seq BIGINT NOT NULL,
    last_seq BIGINT NOT NULL,
    min_ts TEXT COLLATE "C" NOT NULL,
    max_ts TEXT COLLATE "C" NOT NULL
);
CREATE INDEX time_blocks_by_max ON time_blocks (tree, max_ts, min_ts, first_seq, last_seq);
CREATE INDEX time_blocks_by_min ON time_blocks (tree, min_ts, max_ts, first_seq, last_seq);
CREATE TABLE events (
    tree BIGINT NOT NULL,
    seq BIGINT NOT NULL,
    id TEXT COLLATE "C" NOT NULL,
    conversation_id TEXT COLLATE "C" NOT NULL,
    kind TEXT COLLATE "C" NOT NULL,
    source TEXT COLLATE "C" NOT NULL,
    timestamp TEXT COLLATE "C" NOT NULL,
    subagent_id TEXT COLLATE "C",
    parent_tool_use_id TEXT COLLATE "C",
    json TEXT NOT NULL
);
""" + EVENT_INDEXES + """
CREATE TABLE conversations (
    id TEXT COLLATE "C" PRIMARY KEY,
    root_id TEXT COLLATE "C" NOT NULL,
    parent_id TEXT COLLATE "C",
    status TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL,
    json TEXT NOT NULL,
    position BIGSERIAL
);
CREATE INDEX conversations_by_tree ON conversations (root_id, created_at, position);
CREATE INDEX conversations_roots ON conversations (created_at, id)
    WHERE parent_id IS NULL;
CREATE INDEX conversations_roots_by_status ON conversations (status, created_at, id)
    WHERE parent_id IS NULL;
CREATE TABLE leases (
    conversation_id TEXT COLLATE "C" PRIMARY KEY,
    owner TEXT COLLATE "C" NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX leases_by_owner ON leases (owner)
"""

_SECRETS = """
CREATE TABLE server_secrets (
    name TEXT COLLATE "C" PRIMARY KEY,
    value TEXT NOT NULL
)
"""
"""Secrets every replica shares (``server_secrets.py``): the page-token key."""

MIGRATIONS: tuple[str, ...] = (_V1, _SECRETS, postgres_text.MIGRATION)
"""Migration n brings the database from version n - 1 to n."""

_MIGRATION_LOCK = 0x7461736B77697265  # "taskwire": replicas starting together migrate one at a time


def describe(url: str) -> str:
    """``url`` without its password, for messages."""
    if "@" not in url:
        return url
    scheme, rest = url.split("://", 1) if "://" in url else ("", url)
    credentials, host = rest.rsplit("@", 1)
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}@{host}" if scheme else f"{user}@{host}"


async def create_pool(url: str, *, max_size: int = 10, timeout: float = 10.0) -> asyncpg.Pool:
    """A pool of connections to ``url`` (``postgresql://user:pass@host:port/db?search_path=s``);
    connecting gives up after ``timeout`` seconds."""
    # asyncpg speaks the ``postgresql`` and ``postgres`` schemes only.
    dsn = url.replace("postgresql+asyncpg://", "postgresql://", 1)
    # No floor of idle connections: asyncpg restores one in the background, and logs each failed
    # attempt with a traceback while the database is down; connections are made when needed.
    return await asyncpg.create_pool(dsn, min_size=0, max_size=max_size, command_timeout=60, timeout=timeout)


async def migrate(pool: asyncpg.Pool, *, where: str) -> None:
    """Bring the database to the newest schema; raises ``SchemaVersionError`` if it is newer.

    Then fill in what a migration left to fill and make the body search index if it is
    missing (``postgres_text.py``), each in transactions of its own.

    Safe when several replicas start at once: an advisory lock makes them take turns, and the
    later ones find nothing left to do."""
    async with pool.acquire() as conn:
        await conn.execute("SELECT pg_advisory_lock($1)", _MIGRATION_LOCK)
        try:
            async with conn.transaction():
                await _apply_migrations(conn, where=where)
            await postgres_text.fill_body_text(conn, where=where)
            await postgres_text.ensure_index(conn, where=where)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", _MIGRATION_LOCK)


async def _apply_migrations(conn: asyncpg.Connection, *, where: str) -> None:
    """The pending migrations, inside the caller's transaction."""
    if await conn.fetchval("SELECT current_schema()") is None:
        raise RuntimeError(
            f"the database at {where} has no schema on its search_path: create it "
            "(CREATE SCHEMA ...) or fix ?search_path= in OH_DATABASE_URL"
        )
    await conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    found = await conn.fetchval("SELECT max(version) FROM schema_version") or 0
    pending = pending_migrations(found, MIGRATIONS, where=where)
    for number, script in enumerate(pending, start=found + 1):
        await conn.execute(script)  # without arguments, asyncpg runs a whole script
        await conn.execute("DELETE FROM schema_version")
        await conn.execute("INSERT INTO schema_version (version) VALUES ($1)", number)
