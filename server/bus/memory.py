"""MemoryBus: the in-process bus, one topic per root conversation.

Each subscription is a bounded queue. ``publish`` runs in the event loop's thread, never
awaits and never waits for a subscriber: a full queue marks its subscription overflowed, and
from then on that subscriber's ``get`` raises ``Overflow`` at once. The records still queued
are dropped with it rather than drained first: a subscriber a whole queue behind only falls
further behind by draining, and the store holds them all. Its resume point is the last
``seq`` it handled.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from ..errors import Unavailable
from ..events import EventRecord
from .base import CommandHandler, Overflow


class MemorySubscription:
    """One subscriber's bounded queue on one root's topic (see ``Subscription``)."""

    __slots__ = ("_bus", "root_id", "maxsize", "_items", "_waiter", "_overflowed")

    def __init__(self, bus: MemoryBus, root_id: str, maxsize: int) -> None:
        if maxsize < 1:
            raise ValueError("a subscription needs maxsize >= 1")
        self._bus = bus
        self.root_id = root_id
        self.maxsize = maxsize
        self._items: deque[EventRecord] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._overflowed = False

    @property
    def overflowed(self) -> bool:
        return self._overflowed

    def deliver(self, record: EventRecord) -> None:
        """Queue ``record`` (the bus calls this). Never blocks; past ``maxsize`` it overflows."""
        if self._overflowed:
            return
        if len(self._items) >= self.maxsize:
            self._overflowed = True
            self._items.clear()
        else:
            self._items.append(record)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> EventRecord:
        while True:
            record = self.get_nowait()
            if record is not None:
                return record
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def get_nowait(self) -> EventRecord | None:
        if self._overflowed:
            raise Overflow(f"subscription to {self.root_id!r} overflowed its {self.maxsize} records")
        return self._items.popleft() if self._items else None

    async def __aenter__(self) -> MemorySubscription:
        self._bus._attach(self)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._bus._detach(self)
        self._items.clear()


class MemoryBus:
    """Publishes records to the subscribers of a root's topic, in this process."""

    def __init__(self) -> None:
        # Topic -> its subscriptions (a dict as an ordered set); empty topics are removed.
        self._topics: dict[str, dict[MemorySubscription, None]] = {}

    def publish(self, root_id: str, record: EventRecord) -> None:
        subscriptions = self._topics.get(root_id)
        if subscriptions:
            for subscription in subscriptions:
                subscription.deliver(record)

    def subscribe(self, root_id: str, *, maxsize: int) -> MemorySubscription:
        return MemorySubscription(self, root_id, maxsize)

    def subscriptions(self, root_id: str) -> list[MemorySubscription]:
        """The live subscriptions on ``root_id``'s topic."""
        return list(self._topics.get(root_id, ()))

    def queue_depths(self) -> list[int]:
        """How many records each live subscription has queued (metrics)."""
        return [len(sub._items) for subs in self._topics.values() for sub in subs]

    def subscriber_count(self, root_id: str | None = None) -> int:
        """Live subscriptions on ``root_id``'s topic (on every topic when ``None``)."""
        if root_id is not None:
            return len(self._topics.get(root_id, ()))
        return sum(len(subs) for subs in self._topics.values())

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        self._topics.clear()

    @property
    def healthy(self) -> bool:
        return True

    def _attach(self, subscription: MemorySubscription) -> None:
        self._topics.setdefault(subscription.root_id, {})[subscription] = None

    def _detach(self, subscription: MemorySubscription) -> None:
        subscriptions = self._topics.get(subscription.root_id)
        if subscriptions is None:
            return
        subscriptions.pop(subscription, None)
        if not subscriptions:
            del self._topics[subscription.root_id]

    # -- commands: in one process, a replica can only reach itself -------------------------

    _replica: str | None = None
    _command_handler: CommandHandler | None = None

    async def set_command_handler(self, replica_id: str, handler: CommandHandler) -> None:
        self._replica, self._command_handler = replica_id, handler

    async def send_command(self, replica_id: str, command: dict[str, Any], *, timeout: float) -> Any:
        """Runs ``command`` here if ``replica_id`` is this process; other replicas cannot be
        reached without a shared bus (``Unavailable``)."""
        if replica_id != self._replica or self._command_handler is None:
            raise Unavailable(
                f"cannot reach replica {replica_id!r}: replicas share commands over Redis (set OH_REDIS_URL)",
                code="replica_unreachable",
            )
        return await asyncio.wait_for(self._command_handler(command), timeout)
