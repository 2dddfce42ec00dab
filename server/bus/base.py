"""The bus: live delivery of a conversation tree's events to its subscribers.

Live delivery may drop (a slow subscriber, a Redis restart); the store never does. Records
carry ``seq`` and ``prev_seq`` so a subscriber sees a gap and fills it from the store.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Protocol

from ..events import EventRecord

CommandHandler = Callable[[dict[str, Any]], Awaitable[Any]]
"""Runs a command another replica sent to this one; returns a JSON-able result."""


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

    def queue_depths(self) -> list[int]:
        """How many records each of this process's subscriptions has queued (metrics)."""
        ...

    async def set_command_handler(self, replica_id: str, handler: CommandHandler) -> None:
        """Receive the commands sent to ``replica_id`` (this process) and run them with
        ``handler``. Replies to this replica's own ``send_command`` calls arrive the same way."""
        ...

    async def send_command(self, replica_id: str, command: dict[str, Any], *, timeout: float) -> Any:
        """Run ``command`` on replica ``replica_id`` and return its handler's result. A
        ``TaskwireError`` the handler raises is raised here (same class, detail and code);
        ``Unavailable`` when that replica cannot be reached or does not answer in ``timeout``."""
        ...
