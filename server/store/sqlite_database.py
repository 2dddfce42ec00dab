"""The SQLite connections of one store: one writer, a few readers.

Every write goes through the writer connection under one lock, so writes never wait on
SQLite's file lock. Readers read committed data concurrently (WAL mode lets them run while
the writer writes). An in-memory database exists only inside its one connection, so there
the readers share the writer connection and its lock.

Writes are owned by the store (``owned.py``): ``write`` runs its transaction in a task of the
store's, and ``locked`` is for such tasks alone (the event writer's, ``write``'s). A caller's
cancellation so never lands between ``BEGIN`` and ``COMMIT``, and the writer connection is
never handed on inside a transaction: a block that leaves one open is rolled back. When the
database fails (``SQLITE_FULL``, ``SQLITE_READONLY``, ``SQLITE_BUSY`` past the busy timeout,
an I/O error) the error becomes ``StoreUnavailable``, the store is unhealthy (``health``) and
the failing connection is reopened on its next use, so the store recovers once the cause is
gone.

A file database is checkpointed (the WAL copied into the database file) by a connection of its
own, every ``CHECKPOINT_SECONDS``, instead of by SQLite inside whichever commit finds the WAL
at a thousand pages: that commit took milliseconds longer, which was most of an append's p99.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Awaitable, Callable, Iterable, Sequence, TypeVar

import aiosqlite

from ..errors import StoreUnavailable
from .health import StoreHealth
from .owned import OwnedWrites, open_whole
from .sqlite_faults import fault
from .sqlite_schema import MEMORY, connect, database_path, migrate
from .sqlite_statements import StatementGroups
from .write_lock import WriteLock

log = logging.getLogger(__name__)

T = TypeVar("T")
WriterSetup = Callable[[aiosqlite.Connection], Awaitable[None]]

CHECKPOINT_SECONDS = 0.5
"""How often a file database's WAL is checkpointed (``PASSIVE``: it waits for nobody)."""

class _Reader:
    """A reader connection's slot; an empty slot connects on its next use."""

    __slots__ = ("conn",)

    def __init__(self, conn: aiosqlite.Connection | None) -> None:
        self.conn = conn


class SQLiteDatabase:
    """Opens, lends and closes the connections of the database at ``url``."""

    def __init__(self, url: str, *, readers: int = 4, timeout: float = 10.0) -> None:
        self.path = database_path(url)
        self.timeout = timeout
        """Seconds a statement waits for SQLite's lock (``busy_timeout``) before it fails."""
        self.owned = OwnedWrites(f"sqlite write {self.path}")
        self.health = StoreHealth(self.path, probe=self.ready)
        self._reader_count = readers if self.path != MEMORY else 0
        self._lock = WriteLock()
        self._statements = StatementGroups(self.locked, self.owned)
        self._writer: aiosqlite.Connection | None = None
        self._writer_stale = False
        self._writer_setups: list[WriterSetup] = []
        self._readers: list[_Reader] = []
        self._idle: asyncio.Queue[_Reader] = asyncio.Queue()
        self._checkpointer: aiosqlite.Connection | None = None
        self._checkpoints: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._open = False

    def on_writer_connect(self, setup: WriterSetup) -> None:
        """Run ``setup`` on every new writer connection (before ``open``): what a connection
        holds for itself (``TEMP`` triggers) is set up again when it is reopened."""
        self._writer_setups.append(setup)

    async def open(self) -> None:
        """Connect, apply migrations, open the readers and start checkpointing. Cancelled, it
        finishes what it started (a migration commits whole or not at all), then closes."""
        await open_whole(self.owned.start(self._connect_all()), self.close)

    async def _connect_all(self) -> None:
        try:
            self._writer = await connect(self.path, timeout=self.timeout)
            await migrate(self._writer, where=self.path)
            await self._set_up_writer(self._writer)
            for _ in range(self._reader_count):
                reader = _Reader(await connect(self.path, read_only=True, timeout=self.timeout))
                self._readers.append(reader)
                self._idle.put_nowait(reader)
            if self.path != MEMORY:
                self._checkpointer = await connect(self.path, timeout=self.timeout)
                self._stopping.clear()
                self._checkpoints = asyncio.create_task(self._checkpoint_forever(), name="sqlite checkpoints")
            self._open = True
        except BaseException as exc:
            await self._close_connections()
            reason = fault(exc)
            if reason is not None:
                raise StoreUnavailable(f"{reason} ({self.path})") from exc
            raise

    async def close(self) -> None:
        """Wait for the writes in progress, then close every connection."""
        await self.health.close()
        await self.owned.drain()
        await self._close_connections()

    async def _close_connections(self) -> None:
        self._open = False
        if self._checkpoints is not None:
            self._stopping.set()  # a checkpoint in progress ends first
            await asyncio.gather(self._checkpoints, return_exceptions=True)
            self._checkpoints = None
        for conn in [*(r.conn for r in self._readers), self._checkpointer, self._writer]:
            if conn is not None:
                try:
                    await conn.close()  # the last one to close checkpoints what is left
                except Exception as exc:  # a broken connection is gone all the same
                    log.warning("closing a connection to %s failed: %r", self.path, exc)
        self._readers.clear()
        self._idle = asyncio.Queue()
        self._checkpointer = self._writer = None

    async def _checkpoint_forever(self) -> None:
        failing = False
        while True:
            try:
                await asyncio.wait_for(self._stopping.wait(), CHECKPOINT_SECONDS)
                return
            except asyncio.TimeoutError:
                pass
            try:
                if self._checkpointer is None:
                    self._checkpointer = await connect(self.path, timeout=self.timeout)
                await self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)")
                failing = False
            except Exception as exc:  # tried again next time, on a new connection if need be
                if not failing:
                    log.warning("checkpoint of %s failed: %r", self.path, exc)
                failing = True
                if fault(exc) is not None and self._checkpointer is not None:
                    stale, self._checkpointer = self._checkpointer, None
                    await _close_quietly(stale)

    # -- writing --------------------------------------------------------------------------

    async def write(self, work: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        """Run ``work`` on the writer connection inside one transaction (``BEGIN IMMEDIATE``
        ... ``COMMIT``) in a task the store owns: committed whole or rolled back whole,
        whatever happens to the caller. Raises ``StoreUnavailable`` when the database cannot
        be written."""
        return await self.owned.run(self._write_now(work))

    async def write_statement(self, sql: str, params: Iterable[Any] | dict[str, Any] = ()) -> list[Sequence[Any]]:
        """Run one statement on the writer connection, in autocommit (atomic by itself), in a
        task the store owns, and return its rows (``RETURNING``). Statements that come
        together run together, in one trip to the writer's thread (``sqlite_statements.py``),
        where ``write`` takes four trips each (``BEGIN``, a read, the write, ``COMMIT``)."""
        return await self._statements.run(sql, params)

    async def _write_now(self, work: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        async with self.locked() as conn, transaction(conn):
            return await work(conn)

    @asynccontextmanager
    async def locked(self, *, urgent: bool = False) -> AsyncIterator[aiosqlite.Connection]:
        """The writer connection, in autocommit mode (each statement its own transaction unless
        the block opens one), for a task the store owns. The block's database faults become
        ``StoreUnavailable``; a transaction it leaves open is rolled back. ``urgent`` (the
        event writer's) goes before the other waiters (``write_lock.py``)."""
        async with self._lock.hold(urgent=urgent):
            try:
                conn = await self._writer_connection()
            except Exception as exc:
                reason = fault(exc)
                if reason is None:
                    raise
                raise self.health.failed(reason) from exc
            changes = conn.total_changes
            try:
                yield conn
            except Exception as exc:
                reason = fault(exc)
                if reason is None:
                    raise
                if self.path != MEMORY:
                    self._writer_stale = True  # reopened before the next write
                raise self.health.failed(reason) from exc
            else:
                if conn.total_changes != changes:  # a block that wrote nothing proves nothing
                    self.health.succeeded()
            finally:
                await self._end_transaction(conn)

    async def _writer_connection(self) -> aiosqlite.Connection:
        if self._writer is not None and not self._writer_stale:
            return self._writer
        if not self._open:
            raise RuntimeError("the SQLite store is not open")
        stale, self._writer = self._writer, None
        if stale is not None:
            await _close_quietly(stale)
        conn = await connect(self.path, timeout=self.timeout)
        try:
            await self._set_up_writer(conn)
        except BaseException:
            await _close_quietly(conn)
            raise
        self._writer, self._writer_stale = conn, False
        log.info("reopened the writer connection to %s", self.path)
        return conn

    async def _set_up_writer(self, conn: aiosqlite.Connection) -> None:
        if self.path != MEMORY:
            await conn.execute("PRAGMA wal_autocheckpoint = 0")  # the checkpointer's job
        for setup in self._writer_setups:
            await setup(conn)

    async def _end_transaction(self, conn: aiosqlite.Connection) -> None:
        if not conn.in_transaction:
            return
        try:
            await conn.execute("ROLLBACK")
        except Exception as exc:
            log.warning("rolling back on %s failed: %r", self.path, exc)
            self._writer_stale = self.path != MEMORY

    async def ready(self) -> str | None:
        """``None`` when the database reads and takes a write, else why not (a real write:
        the schema's version set to itself, which fails as an append would)."""
        try:
            await self.fetchone("SELECT count(*) FROM schema_version")
            await self.write(lambda conn: conn.execute("UPDATE schema_version SET version = version"))
        except StoreUnavailable as exc:
            return exc.reason
        return None

    # -- reading --------------------------------------------------------------------------

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[aiosqlite.Connection]:
        """A connection to read committed data with. Database faults become
        ``StoreUnavailable`` (the connection is replaced on its next use)."""
        if not self._reader_count:
            async with self._lock.hold():
                try:
                    yield await self._writer_connection()
                except Exception as exc:
                    reason = fault(exc)
                    if reason is None:
                        raise
                    raise StoreUnavailable(reason) from exc
            return
        reader = await self._idle.get()
        try:
            if reader.conn is None:
                reader.conn = await self.owned.run(connect(self.path, read_only=True, timeout=self.timeout))
            yield reader.conn
        except Exception as exc:
            reason = fault(exc)
            if reason is None:
                raise
            stale, reader.conn = reader.conn, None
            if stale is not None:
                self.owned.start(_close_quietly(stale))
            raise StoreUnavailable(reason) from exc
        finally:
            self._idle.put_nowait(reader)

    async def fetchall(self, sql: str, params: Iterable[Any] | dict[str, Any] = ()) -> list[Sequence[Any]]:
        """All rows of one query, read in one trip to a reader's thread."""
        async with self.reading() as conn:
            return list(await conn.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Iterable[Any] | dict[str, Any] = ()) -> Sequence[Any] | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None


@asynccontextmanager
async def transaction(conn: aiosqlite.Connection) -> AsyncIterator[None]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` on an exception. For a task the store
    owns, inside ``SQLiteDatabase.locked`` (which rolls back a failed ``COMMIT`` too)."""
    await conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            await conn.execute("ROLLBACK")
        raise
    await conn.execute("COMMIT")


async def _close_quietly(conn: aiosqlite.Connection) -> None:
    try:
        await conn.close()
    except Exception as exc:  # it is being replaced because it failed
        log.debug("closing a failed connection: %r", exc)
