"""The PostgreSQL store's connections: an asyncpg pool whose writes the store owns.

``write`` runs a transaction in a task of the store's (``owned.py``): a caller cancelled while
it waits never leaves a pooled connection half way through a query or a transaction open;
the transaction commits whole or rolls back whole. Reads (``fetch``, ``fetchrow``,
``fetchval``) run in the caller's task: cancelling one loses nothing.

A connection that fails because of the database is closed, never lent again. A lost one (the
server restarted, a backend terminated, the network cut) likely means all are, so the pool
replaces every idle connection before lending it again. A statement that failed because its
connection was lost before the transaction reached ``COMMIT`` wrote nothing, so it is tried
once more on a fresh connection; one lost during ``COMMIT`` may or may not have committed and
is not retried.
What still fails because of the database (down, full, out of connections past ``timeout``)
raises ``StoreUnavailable`` and makes the store unhealthy until a write succeeds.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, AsyncIterator, Awaitable, Callable, TypeVar

import asyncpg

from ..errors import StoreUnavailable
from .health import StoreHealth
from .owned import OwnedWrites, open_whole
from .postgres_schema import create_pool, describe, migrate

T = TypeVar("T")

# A connection the server ended (or the network dropped) fails its next statement with one of
# these; InternalClientError is asyncpg's protocol left mid-message by such an end.
_LOST = (
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.InternalClientError,
    ConnectionError,
)
_FAULTS = (
    *_LOST,
    asyncpg.InsufficientResourcesError,  # disk full, out of memory, too many connections
    asyncpg.exceptions.OperatorInterventionError,  # shutting down, cannot connect now
    asyncpg.exceptions.PostgresSystemError,  # I/O errors
    asyncpg.exceptions.ReadOnlySQLTransactionError,  # a standby
    OSError,
    asyncio.TimeoutError,
)


def _lost(exc: BaseException) -> bool:
    if isinstance(exc, _LOST):
        return True
    return isinstance(exc, asyncpg.InterfaceError) and "closed" in str(exc)


def fault(exc: BaseException) -> str | None:
    """Why ``exc`` means the database cannot be used now, or ``None`` when it is about the
    request (a duplicate key, a bad argument)."""
    if _lost(exc) or isinstance(exc, _FAULTS):
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return None


@contextlib.asynccontextmanager
async def _discarded_on_fault(conn: asyncpg.Connection) -> AsyncIterator[None]:
    """A connection that failed because of the database is closed, so the pool never lends
    it again: it connects a new one in its place."""
    try:
        yield
    except Exception as exc:
        if fault(exc) is not None and not conn.is_closed():
            conn.terminate()
        raise


class PostgresPool:
    """The connections of one ``PostgresStore``; leases share them."""

    def __init__(self, url: str, *, max_size: int = 10, timeout: float = 10.0) -> None:
        self.url = url
        self.where = describe(url)
        self.timeout = timeout
        """Seconds to wait for a connection (or to connect) before failing."""
        self.owned = OwnedWrites(f"postgres write {self.where}")
        self.health = StoreHealth(self.where, probe=self.ready)
        self._max_size = max_size
        self._pool: asyncpg.Pool | None = None  # type: ignore[assignment]

    async def open(self) -> None:
        """Connect and migrate (cancelled: see ``owned.open_whole``)."""
        await open_whole(self.owned.start(self._connect()), self.close)

    async def _connect(self) -> None:
        try:
            self._pool = await create_pool(self.url, max_size=self._max_size, timeout=self.timeout)
        except Exception as exc:
            reason = fault(exc)
            if reason is None:
                raise
            raise StoreUnavailable(f"{reason} ({self.where})") from exc
        try:
            await migrate(self._pool, where=self.where)
        except BaseException:
            await self._pool.close()
            self._pool = None
            raise

    async def close(self) -> None:
        """Wait for the writes in progress, then close every connection. Harmless twice."""
        await self.health.close()
        await self.owned.drain()
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    @property
    def raw(self) -> asyncpg.Pool:
        if self._pool is None:
            raise RuntimeError("the PostgreSQL store is not open")
        return self._pool

    # -- writing --------------------------------------------------------------------------

    async def write(self, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """Run ``work`` on a pooled connection inside one transaction, in a task the store
        owns: committed whole or rolled back whole, whatever happens to the caller. Raises
        ``StoreUnavailable`` when the database cannot be written."""
        return await self.owned.run(self._write_now(work))

    async def execute(self, sql: str, *args: Any) -> str:
        """One statement that writes, as ``write`` runs it."""
        return await self.write(lambda conn: conn.execute(sql, *args))

    async def _write_now(self, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        for attempt in (1, 2):
            committing = False
            try:
                async with self.raw.acquire(timeout=self.timeout) as conn, _discarded_on_fault(conn):
                    async with conn.transaction():
                        result = await work(conn)
                        committing = True
            except Exception as exc:
                reason = fault(exc)
                if reason is None:
                    raise
                if attempt == 1 and _lost(exc) and not committing:
                    await self._expire()
                    continue  # nothing was written: once more, on a new connection
                if committing:
                    reason += " (while committing: the write may or may not be stored)"
                raise self.health.failed(reason) from exc
            self.health.succeeded()
            return result
        raise AssertionError("unreachable")

    async def _expire(self) -> None:
        # One connection lost likely means all of them (the server restarted, the network
        # dropped): the pool replaces every idle one before lending it again.
        if self._pool is not None:
            await self._pool.expire_connections()

    async def ready(self) -> str | None:
        """``None`` when the database reads and takes a write, else why not."""
        try:
            await self.fetchval("SELECT count(*) FROM schema_version")
            await self.execute("UPDATE schema_version SET version = version")
        except StoreUnavailable as exc:
            return exc.reason
        return None

    # -- reading --------------------------------------------------------------------------

    async def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        return await self._read(lambda conn: conn.fetch(sql, *args))

    async def read_planned(self, work: Callable[[asyncpg.Connection], Awaitable[T]], settings: tuple[str, ...] = ()) -> T:
        """Run ``work``'s reads in one read-only transaction whose statements are planned for
        their parameters' values at every run, with the planner ``settings`` given (``SET
        LOCAL``; ``work`` may set more): PostgreSQL's generic plan of a prepared statement
        (chosen after five runs) cannot know whether a text search's term is rare, and reads
        a whole tree where an index would answer at once."""
        statements = "; ".join(f"SET LOCAL {setting}" for setting in ("plan_cache_mode = force_custom_plan", *settings))

        async def query(conn: asyncpg.Connection) -> T:
            async with conn.transaction(readonly=True):
                await conn.execute(statements)
                return await work(conn)

        return await self._read(query)

    async def fetchrow(self, sql: str, *args: Any) -> asyncpg.Record | None:
        return await self._read(lambda conn: conn.fetchrow(sql, *args))

    async def fetchval(self, sql: str, *args: Any) -> Any:
        return await self._read(lambda conn: conn.fetchval(sql, *args))

    async def _read(self, query: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        for attempt in (1, 2):
            try:
                async with self.raw.acquire(timeout=self.timeout) as conn, _discarded_on_fault(conn):
                    return await query(conn)
            except Exception as exc:
                reason = fault(exc)
                if reason is None:
                    raise
                if attempt == 1 and _lost(exc):
                    await self._expire()
                    continue  # a read is safe to repeat
                raise StoreUnavailable(reason) from exc
        raise AssertionError("unreachable")
