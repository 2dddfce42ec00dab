"""The bus: live delivery of a conversation tree's events to its subscribers.

Live delivery may drop (a slow subscriber, a Redis restart); the store never does. Records
carry ``seq`` and ``prev_seq`` so a subscriber sees a gap and fills it from the store.
"""

from __future__ import annotations

from typing import Protocol

from server.events import EventRecord


class Overflow(Exception):
    """The subscriber's bounded queue filled up: it fell behind and must resume from the store."""


class Subscription(Protocol):
    """One subscriber's bounded queue on one root's topic. Use as an async context manager."""

    async def get(self) -> EventRecord:
        """The next record. Raises ``Overflow`` once the queue has overflowed (records after
        the overflow were dropped; resume from the store)."""
        ...

    def get_nowait(self) -> EventRecord | None:
        """The next record if one is queued, else ``None``; raises ``Overflow`` likewise."""
        ...

    async def __aenter__(self) -> Subscription: ...

    async def __aexit__(self, *exc: object) -> None: ...


class Bus(Protocol):
    """Publishes records to a root conversation's topic; hands each subscriber a bounded queue."""

    def publish(self, root_id: str, record: EventRecord) -> None:
        """Queue ``record`` for every subscriber of ``root_id``. Never blocks, never waits for a
        subscriber; records published by one process reach its subscribers in publish order."""
        ...

    def subscribe(self, root_id: str, *, maxsize: int) -> Subscription:
        """A new subscription, live from the moment its context is entered."""
        ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    @property
    def healthy(self) -> bool:
        """False while the bus cannot deliver (Redis down); ``/ready`` reports it."""
        ...
