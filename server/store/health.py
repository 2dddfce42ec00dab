"""Whether a store can write now, and why not: what ``/ready`` reports.

A backend records each write's outcome here. A failure the database is to blame for (the disk
is full or read-only, the lock stayed held past the timeout, the connection was lost) makes the
store unhealthy, with that reason, until a write succeeds again: the store reconnects by
itself, and while it is unhealthy a probe of its own (a harmless write, ``probe``) runs every
``PROBE_SECONDS``, so the store knows it writes again within about that long of the cause
being gone, with no traffic; ``/ready`` and the runtime (``on_recovered``) follow at once.

An expected fault is logged as one line when the store stops writing and one when it writes
again (with how long it could not), never a traceback: the reasons in between are debug lines.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Awaitable, Callable

from ..errors import StoreUnavailable

log = logging.getLogger(__name__)

PROBE_SECONDS = 0.25
"""How often an unhealthy store tries a write of its own."""


class StoreHealth:
    """The last write failure of one store, until a write succeeds."""

    def __init__(self, where: str, probe: Callable[[], Awaitable[object]] | None = None) -> None:
        self._where = where
        self._probe = probe
        self._prober: asyncio.Task[None] | None = None
        self._since = 0.0
        self._listeners: list[Callable[[], None]] = []
        self.reason: str | None = None
        """Why the store cannot write, or ``None`` when its last write succeeded."""
        self.failures = 0
        """Writes failed so far: a caller that sees it move knows some write of its was lost."""

    def on_recovered(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (synchronously) each time the store writes again after failing."""
        self._listeners.append(listener)

    def failed(self, reason: str) -> StoreUnavailable:
        """Record a write failure; returns the error to raise. Logged once per outage."""
        if self.reason is None:
            self._since = time.monotonic()
            log.warning("the store at %s cannot write: %s", self._where, reason)
        elif reason != self.reason:
            log.debug("the store at %s still cannot write: %s", self._where, reason)
        self.reason = reason
        self.failures += 1
        self._watch()
        return StoreUnavailable(reason)

    def succeeded(self) -> None:
        if self.reason is None:
            return
        log.info("the store at %s writes again after %.1f s (it could not: %s)",
                    self._where, time.monotonic() - self._since, self.reason)
        self.reason = None
        for listener in list(self._listeners):
            listener()

    def _watch(self) -> None:
        if self._probe is None or (self._prober is not None and not self._prober.done()):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a synchronous caller: the next write notices instead
            return
        self._prober = loop.create_task(self._probe_until_healthy(), name=f"probe the store at {self._where}")

    async def _probe_until_healthy(self) -> None:
        assert self._probe is not None
        while self.reason is not None:
            await asyncio.sleep(PROBE_SECONDS)
            try:
                await self._probe()  # its outcome lands in failed() or succeeded()
            except StoreUnavailable:
                pass
            except Exception as exc:  # not a fault of the database: say so once, keep probing
                log.debug("probing the store at %s failed: %r", self._where, exc)

    async def close(self) -> None:
        """Stop probing (the store is closing)."""
        if self._prober is not None:
            self._prober.cancel()
            await asyncio.gather(self._prober, return_exceptions=True)
            self._prober = None
