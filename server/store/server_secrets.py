"""Secrets a server keeps in its database, so every replica that shares the database shares
them: today the key that signs page tokens (``pagination.py``).

The first server to open a fresh database draws each secret; the others (and every later
start) read the one stored. ``INSERT ... ON CONFLICT DO NOTHING`` then ``SELECT`` makes
replicas that start at once agree.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .postgres_pool import PostgresPool
    from .sqlite_database import SQLiteDatabase

PAGE_KEY = "page_id_hmac"
"""The HMAC key of ``page_id`` tokens."""


def draw() -> str:
    """A fresh secret: 256 random bits, hex."""
    return secrets.token_hex(32)


async def sqlite_secret(db: SQLiteDatabase, name: str) -> bytes:
    """The secret ``name`` of the SQLite database, drawn on first use."""

    async def work(conn) -> str:  # type: ignore[no-untyped-def]
        await conn.execute("INSERT INTO server_secrets (name, value) VALUES (?, ?) ON CONFLICT DO NOTHING", (name, draw()))
        rows = list(await conn.execute_fetchall("SELECT value FROM server_secrets WHERE name = ?", (name,)))
        return rows[0][0]

    return bytes.fromhex(await db.write(work))


async def postgres_secret(db: PostgresPool, name: str) -> bytes:
    """The secret ``name`` of the PostgreSQL database, drawn on first use."""

    async def work(conn) -> str:  # type: ignore[no-untyped-def]
        await conn.execute(
            "INSERT INTO server_secrets (name, value) VALUES ($1, $2) ON CONFLICT DO NOTHING", name, draw()
        )
        return await conn.fetchval("SELECT value FROM server_secrets WHERE name = $1", name)

    return bytes.fromhex(await db.write(work))
