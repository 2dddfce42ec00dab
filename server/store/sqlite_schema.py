"""The SQLite schema, its migrations, and how a connection is set up.

Events live in one table for all trees. A tree's root id is stored once, in ``trees``, and
events carry its small integer key, which keeps the indexes (every one starts with the tree)
compact. Each index ends with ``seq`` after the tree and the filter's column, so a filtered
search reads its page in ``seq`` order and stops. The kind-within-stream index also makes the
common "this conversation's events of kind K" search and count exact.

A tree's events up to ``trees.counted_seq`` (all but the last thousand or so) are also
summarized, so two questions need not read the log: ``event_counts`` holds the count per
(tree, stream, kind), the API's usual count filters; ``time_blocks`` holds each run of about a
thousand events' first and last ``seq`` and lowest and highest timestamp, which turns a time
range into the ``seq`` range to read (timestamps follow ``seq`` closely, but need not). The
writer folds the newest events in (``sqlite_writer.py``).
"""

from __future__ import annotations

from pathlib import Path

import aiosqlite

import sqlite3

from .schema import EVENT_INDEXES, pending_migrations
from . import sqlite_text

MEMORY = ":memory:"

_V1 = """
CREATE TABLE trees (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    root_id TEXT NOT NULL UNIQUE,
    counted_seq INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE event_counts (
    tree INTEGER NOT NULL,
    conversation_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (tree, conversation_id, kind)
) WITHOUT ROWID;
CREATE TABLE time_blocks (
    tree INTEGER NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    min_ts TEXT NOT NULL,
    max_ts TEXT NOT NULL
);
CREATE INDEX time_blocks_by_max ON time_blocks (tree, max_ts, min_ts, first_seq, last_seq);
CREATE INDEX time_blocks_by_min ON time_blocks (tree, min_ts, max_ts, first_seq, last_seq);
CREATE TABLE events (
    tree INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    source TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    subagent_id TEXT,
    parent_tool_use_id TEXT,
    json TEXT NOT NULL
);
""" + EVENT_INDEXES + """
CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    root_id TEXT NOT NULL,
    parent_id TEXT,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    json TEXT NOT NULL
);
CREATE INDEX conversations_by_tree ON conversations (root_id, created_at);
CREATE INDEX conversations_roots ON conversations (created_at, id)
    WHERE parent_id IS NULL;
CREATE INDEX conversations_roots_by_status ON conversations (status, created_at, id)
    WHERE parent_id IS NULL
"""

_SECRETS = """
CREATE TABLE server_secrets (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""
"""Secrets every server on this database shares (``server_secrets.py``): the page-token key."""

MIGRATIONS: tuple[str, ...] = (_V1, _SECRETS, sqlite_text.MIGRATION)
"""Migration n brings the database from version n - 1 to n; statements end with ``;``
(a trigger's body holds several: ``statements`` keeps it whole)."""

_PRAGMAS = (
    # NORMAL in WAL mode: a commit survives a crash of the process (not of the machine).
    "PRAGMA synchronous = NORMAL",
    "PRAGMA temp_store = MEMORY",
)


def database_path(url: str) -> str:
    """The file of ``sqlite:///abs/path.db`` (or ``:memory:`` for ``sqlite:///:memory:``)."""
    if not url.startswith("sqlite:"):
        raise ValueError(f"not a SQLite URL: {url!r}")
    rest = url.removeprefix("sqlite:").split("?", 1)[0]
    rest = rest.removeprefix("//")  # the (empty) authority
    if rest in ("", MEMORY, "/" + MEMORY):
        return MEMORY
    if rest.startswith("//"):  # sqlite:////abs/path.db, SQLAlchemy's spelling
        rest = rest[1:]
    return rest


async def connect(path: str, *, read_only: bool = False, timeout: float = 10.0) -> aiosqlite.Connection:
    """A connection in autocommit mode (transactions are explicit), set up for taskwire. A
    statement waits up to ``timeout`` seconds for another connection's lock, then fails
    (``SQLITE_BUSY``)."""
    if path != MEMORY:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = await aiosqlite.connect(path, isolation_level=None)
    try:
        await conn.execute(f"PRAGMA busy_timeout = {max(0, int(timeout * 1000))}")
        if path != MEMORY and not read_only:
            await conn.execute("PRAGMA journal_mode = WAL")
        for pragma in _PRAGMAS:
            await conn.execute(pragma)
        # A bounded page cache (KiB): memory stays flat in the log's length. The writer's is
        # larger because every append updates all the indexes.
        await conn.execute(f"PRAGMA cache_size = {-8192 if read_only else -16384}")
        if read_only:
            await conn.execute("PRAGMA query_only = ON")
    except BaseException:
        await conn.close()
        raise
    return conn


def statements(script: str) -> list[str]:
    """The statements of ``script``, split at the ``;`` that end one (not those inside a
    trigger's ``BEGIN ... END``)."""
    found, pending = [], ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.replace(";", "").strip():
                found.append(pending)
            pending = ""
    if pending.replace(";", "").strip():
        found.append(pending)
    return found


async def migrate(conn: aiosqlite.Connection, *, where: str) -> None:
    """Bring the database to the newest schema; raises ``SchemaVersionError`` if it is newer.
    Then fill in what a migration left to fill (``sqlite_text.fill_body_text``)."""
    sqlite_text.check_version(sqlite3.sqlite_version)
    await conn.execute("BEGIN IMMEDIATE")
    try:
        await conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        rows = list(await conn.execute_fetchall("SELECT max(version) FROM schema_version"))
        found = rows[0][0] or 0
        pending = pending_migrations(found, MIGRATIONS, where=where)
        for number, script in enumerate(pending, start=found + 1):
            for statement in statements(script):
                await conn.execute(statement)
            await conn.execute("DELETE FROM schema_version")
            await conn.execute("INSERT INTO schema_version (version) VALUES (?)", (number,))
        await conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            await conn.execute("ROLLBACK")
        raise
    await sqlite_text.fill_body_text(conn, where=where)
