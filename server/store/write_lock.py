"""The lock of a store's writer connection, where the event writer goes first.

``asyncio.Lock`` serves its waiters in the order they came. On a busy server that put every
batch of events behind the queue of record writes (a model call's usage, a status) that came
while the previous batch was written, and the events' latency became that queue's. Here an
urgent waiter (the event writer) is served before the others; it waits at most for the
holder, and since it lets go between two batches, the others still get a turn after every
batch.
"""

from __future__ import annotations

import asyncio
from collections import deque
from contextlib import asynccontextmanager
from typing import AsyncIterator


class WriteLock:
    """A lock with two queues: urgent waiters are served first, each queue in order."""

    def __init__(self) -> None:
        self._held = False
        self._urgent: deque[asyncio.Future[None]] = deque()
        self._others: deque[asyncio.Future[None]] = deque()

    def locked(self) -> bool:
        """Whether someone holds it."""
        return self._held

    @asynccontextmanager
    async def hold(self, *, urgent: bool = False) -> AsyncIterator[None]:
        """Hold the lock for the block, after the holder and the waiters ahead (every urgent
        one, for a waiter that is not)."""
        await self._acquire(urgent)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, urgent: bool) -> None:
        if not self._held and not self._urgent and not self._others:
            self._held = True
            return
        queue = self._urgent if urgent else self._others
        turn = asyncio.get_running_loop().create_future()
        queue.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self._release()  # handed over just as it was cancelled: hand it on
            elif turn in queue:  # else a release passed it over already
                queue.remove(turn)
            raise

    def _release(self) -> None:
        for queue in (self._urgent, self._others):
            while queue:
                turn = queue.popleft()
                if not turn.done():
                    turn.set_result(None)  # still held: it passes to that waiter
                    return
        self._held = False
