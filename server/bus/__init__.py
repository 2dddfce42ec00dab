"""Live delivery of events: in-process by default, Redis across replicas."""

from __future__ import annotations

from .base import Bus, Overflow, Subscription

__all__ = ["Bus", "Overflow", "Subscription", "open_bus"]


def open_bus(redis_url: str | None) -> Bus:
    """The bus for this server: Redis pub/sub when ``redis_url`` is set, else in-process."""
    if redis_url:
        from .redis import RedisBus

        return RedisBus(redis_url)
    from .memory import MemoryBus

    return MemoryBus()
