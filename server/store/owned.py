"""Writes the store owns: a caller's cancellation never stops one half way.

Any ``await`` of a caller can be cancelled (an interrupt, a pause, a sub-agent cancelled, a
conversation unloaded, shutdown). A write awaited directly would then stop wherever it was:
between ``BEGIN`` and ``COMMIT``, with a statement still running on the database's thread, or
with a pooled connection half way through a query. So every write runs in a task of the
store's own (``OwnedWrites.start``), which nobody cancels, and the caller awaits it through
``settle``: cancelled, the caller waits for the write to end (whole or failed as a whole) and
then raises ``CancelledError``; cancelled once more while it waits, it stops waiting, and the
write still ends in its own task. ``drain`` (called by the store's ``close``) waits for every
write still going.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, Coroutine, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class OwnedWrites:
    """The tasks a store runs its writes in; see the module docstring."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._tasks: set[asyncio.Task[Any]] = set()

    def start(self, work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Run ``work`` in a task of the store's; it runs to its end whoever waits for it."""
        task = asyncio.get_running_loop().create_task(work, name=self._name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def run(self, work: Coroutine[Any, Any, T]) -> T:
        """``start`` ``work`` and wait for its result (``settle``)."""
        return await settle(self.start(work))

    async def drain(self) -> None:
        """Return once every write started so far, and every one they start, has ended."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))


async def settle(task: asyncio.Future[T]) -> T:
    """The result of a store-owned ``task``. A cancelled caller still waits for the task to end
    before it sees its ``CancelledError`` (so what it wrote is whole when it cleans up); a
    second cancellation stops the wait, and the task goes on alone."""
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if task.done():
            raise
        try:
            await asyncio.wait({task})
        finally:
            if task.done() and not task.cancelled() and task.exception() is not None:
                log.warning("a write whose caller was cancelled failed: %r", task.exception())
        raise


async def open_whole(opening: asyncio.Task[None], close: Callable[[], Awaitable[None]]) -> None:
    """Wait for a store's ``opening`` task (connect, migrate). Cancelled, the caller waits for
    it to end (a migration commits whole or not at all), then ``close``-s and raises."""
    try:
        await asyncio.shield(opening)
    except asyncio.CancelledError:
        await asyncio.wait({opening})
        await close()
        raise
