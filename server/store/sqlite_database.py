"""The SQLite connections of one store: one writer, a few readers.

Every write goes through the writer connection under one lock, so writes never wait on
SQLite's file lock. Readers read committed data concurrently (WAL mode lets them run while
the writer writes). An in-memory database exists only inside its one connection, so there
the readers share the writer connection and its lock.

A file database is checkpointed (the WAL copied into the database file) by a connection of its
own, every ``CHECKPOINT_SECONDS``, instead of by SQLite inside whichever commit finds the WAL
at a thousand pages: that commit took milliseconds longer, which was most of an append's p99.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Iterable, Sequence

import aiosqlite

from server.store.sqlite_schema import MEMORY, connect, database_path, migrate

log = logging.getLogger(__name__)

CHECKPOINT_SECONDS = 0.5
"""How often a file database's WAL is checkpointed (``PASSIVE``: it waits for nobody)."""


class SQLiteDatabase:
    """Opens, lends and closes the connections of the database at ``url``."""

    def __init__(self, url: str, *, readers: int = 4) -> None:
        self.path = database_path(url)
        self._reader_count = readers if self.path != MEMORY else 0
        self._lock = asyncio.Lock()
        self._writer: aiosqlite.Connection | None = None
        self._readers: list[aiosqlite.Connection] = []
        self._idle: asyncio.Queue[aiosqlite.Connection] = asyncio.Queue()
        self._checkpointer: aiosqlite.Connection | None = None
        self._checkpoints: asyncio.Task[None] | None = None

    async def open(self) -> None:
        """Connect, apply migrations, open the readers and start checkpointing."""
        self._writer = await connect(self.path)
        try:
            await migrate(self._writer, where=self.path)
            for _ in range(self._reader_count):
                reader = await connect(self.path, read_only=True)
                self._readers.append(reader)
                self._idle.put_nowait(reader)
            if self.path != MEMORY:
                await self._writer.execute("PRAGMA wal_autocheckpoint = 0")
                self._checkpointer = await connect(self.path)
                self._checkpoints = asyncio.create_task(self._checkpoint_forever(), name="sqlite checkpoints")
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.cancel()
            await asyncio.gather(self._checkpoints, return_exceptions=True)
            self._checkpoints = None
        for conn in [*self._readers, self._checkpointer, self._writer]:
            if conn is not None:
                await conn.close()  # the last one to close checkpoints what is left
        self._readers.clear()
        self._idle = asyncio.Queue()
        self._checkpointer = self._writer = None

    async def _checkpoint_forever(self) -> None:
        assert self._checkpointer is not None
        while True:
            await asyncio.sleep(CHECKPOINT_SECONDS)
            try:
                await self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except Exception as exc:  # a busy or failing checkpoint is tried again next time
                log.warning("checkpoint of %s failed: %r", self.path, exc)

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[aiosqlite.Connection]:
        """A connection to read committed data with."""
        if not self._readers:
            async with self._lock:
                yield self._connected(self._writer)
            return
        conn = await self._idle.get()
        try:
            yield conn
        finally:
            self._idle.put_nowait(conn)

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[aiosqlite.Connection]:
        """The writer connection inside one transaction, committed when the block ends
        without an exception, rolled back otherwise."""
        async with self.locked() as conn, transaction(conn):
            yield conn

    @asynccontextmanager
    async def locked(self) -> AsyncIterator[aiosqlite.Connection]:
        """The writer connection, in autocommit mode: each statement is its own transaction
        unless the block opens one (``transaction``)."""
        async with self._lock:
            yield self._connected(self._writer)

    async def fetchall(self, sql: str, params: Iterable[Any] | dict[str, Any] = ()) -> list[Sequence[Any]]:
        """All rows of one query, read in one trip to a reader's thread."""
        async with self.reading() as conn:
            return list(await conn.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Iterable[Any] | dict[str, Any] = ()) -> Sequence[Any] | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    @staticmethod
    def _connected(conn: aiosqlite.Connection | None) -> aiosqlite.Connection:
        if conn is None:
            raise RuntimeError("the SQLite store is not open")
        return conn


@asynccontextmanager
async def transaction(conn: aiosqlite.Connection) -> AsyncIterator[None]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` on an exception."""
    await conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            await conn.execute("ROLLBACK")
        raise
    await conn.execute("COMMIT")
