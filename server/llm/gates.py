"""What the agents of one server share about each model provider: a rate-limit wait and an
optional cap on concurrent requests.

When a provider answers ``429`` with a wait, every agent of the server about to call it waits
that out, instead of each finding out by its own ``429``. ``ProviderGates`` belongs to the
server (the runtime makes one and passes it to every HTTP model): never a module global, so
two servers in one process share nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

Wait = Callable[[float], Awaitable[bool]]
"""Sleeps up to the given seconds; ``False`` when the caller should give up (a pause)."""


class ProviderGate:
    """One provider as this server sees it: until when nobody calls it, and how many calls
    may be open at once (``None``: no cap)."""

    def __init__(self, max_concurrency: int | None = None) -> None:
        self.closed_until = 0.0
        """``time.monotonic()`` before which no request starts (the provider's last wait)."""
        self.max_concurrency = max_concurrency
        self._slots = asyncio.Semaphore(max_concurrency) if max_concurrency else None
        self.waits = 0
        """Requests that waited for a rate limit another request was told of."""

    def hold(self, seconds: float) -> None:
        """The provider asked to wait ``seconds``: nobody calls it before then."""
        self.closed_until = max(self.closed_until, time.monotonic() + seconds)

    async def open(self, wait: Wait) -> bool:
        """Wait out the provider's rate limit (through ``wait``, which a pause can cut short);
        ``False`` if it was cut short."""
        waited = False
        while (left := self.closed_until - time.monotonic()) > 0:
            if not waited:
                self.waits += 1
                waited = True
            if not await wait(left):
                return False
        return True

    async def acquire(self) -> None:
        """Take a request slot (a no-op without a cap)."""
        if self._slots is not None:
            await self._slots.acquire()

    def release(self) -> None:
        if self._slots is not None:
            self._slots.release()


class ProviderGates:
    """Every provider's gate on one server, by endpoint and key."""

    def __init__(self) -> None:
        self._gates: dict[tuple[str, str], ProviderGate] = {}

    def gate(self, url: str, key: str = "", max_concurrency: int | None = None) -> ProviderGate:
        """The gate of the provider at ``url`` called with ``key`` (rate limits are per key).
        The first caller's ``max_concurrency`` sets the cap; later ones share it."""
        gate = self._gates.get((url, key))
        if gate is None:
            gate = self._gates[(url, key)] = ProviderGate(max_concurrency)
        return gate

    @property
    def waits(self) -> int:
        """Requests on this server that waited for a shared rate limit."""
        return sum(gate.waits for gate in self._gates.values())
