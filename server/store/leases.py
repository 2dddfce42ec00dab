"""Leases: which replica runs a conversation, in PostgreSQL (the ``leases`` table).

A lease names its owner (a replica id) and lapses at ``expires_at`` unless the owner renews
it. Times are the database's clock (``now()``), so the replicas' clocks never have to agree.
An expired lease is free: the next replica to ask takes it over. With SQLite there is one
machine and ownership is trivially local: ``leases_for`` gives ``None``.

Every lease write runs as the store's own (``PostgresPool.write``): a replica's command
cancelled while it takes a lease leaves the row taken or not, never a connection half way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from .base import Store

if TYPE_CHECKING:  # only the PostgreSQL store needs asyncpg; SQLite servers start without it
    from .postgres_pool import PostgresPool

_ACQUIRE = """
INSERT INTO leases (conversation_id, owner, expires_at)
VALUES ($1, $2, now() + make_interval(secs => $3))
ON CONFLICT (conversation_id) DO UPDATE
    SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
    WHERE leases.owner = EXCLUDED.owner OR leases.expires_at <= now()
RETURNING owner
"""
_HOLDER = "SELECT owner, extract(epoch FROM expires_at - now()) FROM leases WHERE conversation_id = $1"
_RENEW = """
UPDATE leases SET expires_at = now() + make_interval(secs => $3)
WHERE owner = $1 AND conversation_id = ANY($2::text[])
RETURNING conversation_id
"""


class PostgresLeases:
    """Lease rows in the database of a ``PostgresStore`` (sharing its pool)."""

    def __init__(self, pool: PostgresPool) -> None:
        self._pool = pool

    async def acquire(self, conversation_id: str, owner: str, seconds: float) -> tuple[str, float]:
        """Take or renew the lease for ``owner`` unless another replica holds one that has not
        lapsed. Returns the holder after the attempt and the seconds its lease has left."""
        for _ in range(3):  # the holder may release between the two statements
            taken = await self._pool.write(lambda conn: conn.fetchval(_ACQUIRE, conversation_id, owner, float(seconds)))
            if taken == owner:
                return owner, float(seconds)
            row = await self._pool.fetchrow(_HOLDER, conversation_id)
            if row is not None:
                return row[0], max(0.0, float(row[1]))
        raise RuntimeError(f"the lease of {conversation_id!r} keeps changing hands")

    async def renew(self, owner: str, conversation_ids: Sequence[str], seconds: float) -> set[str]:
        """Extend ``owner``'s leases; returns the ones it still holds (the others were taken)."""
        if not conversation_ids:
            return set()
        ids = list(conversation_ids)
        rows = await self._pool.write(lambda conn: conn.fetch(_RENEW, owner, ids, float(seconds)))
        return {row[0] for row in rows}

    async def release(self, conversation_id: str, owner: str) -> None:
        """Give the lease up (only if ``owner`` holds it)."""
        await self._pool.execute("DELETE FROM leases WHERE conversation_id = $1 AND owner = $2", conversation_id, owner)

    async def release_all(self, owner: str) -> None:
        await self._pool.execute("DELETE FROM leases WHERE owner = $1", owner)

    async def holder(self, conversation_id: str) -> str | None:
        """The replica whose lease on ``conversation_id`` has not lapsed, if any."""
        row = await self._pool.fetchrow(_HOLDER, conversation_id)
        return row[0] if row is not None and row[1] > 0 else None


def leases_for(store: Store) -> PostgresLeases | None:
    """Leases shared by every replica of ``store``'s database, or ``None`` when the store is
    one machine's (SQLite): then every conversation is this process's."""
    from .postgres import PostgresStore

    if isinstance(store, PostgresStore):
        return PostgresLeases(store.pool)
    return None
