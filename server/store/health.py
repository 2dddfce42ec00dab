"""Whether a store can write now, and why not: what ``/ready`` reports.

A backend records each write's outcome here. A failure the database is to blame for (the disk
is full or read-only, the lock stayed held past the timeout, the connection was lost) makes the
store unhealthy, with that reason, until a write succeeds again: the store reconnects by
itself, and ``Store.ready`` probes with a write of its own while the store is unhealthy, so
``/ready`` turns back to 200 as soon as the cause is gone, even with no traffic.
"""

from __future__ import annotations

import logging

from server.errors import StoreUnavailable

log = logging.getLogger(__name__)


class StoreHealth:
    """The last write failure of one store, until a write succeeds."""

    def __init__(self, where: str) -> None:
        self._where = where
        self.reason: str | None = None
        """Why the store cannot write, or ``None`` when its last write succeeded."""
        self.failures = 0
        """Writes failed so far: a caller that sees it move knows some write of its was lost."""

    def failed(self, reason: str) -> StoreUnavailable:
        """Record a write failure; returns the error to raise. Logged once per cause."""
        if reason != self.reason:
            log.warning("the store at %s cannot write: %s", self._where, reason)
        self.reason = reason
        self.failures += 1
        return StoreUnavailable(reason)

    def succeeded(self) -> None:
        if self.reason is not None:
            log.info("the store at %s writes again (it could not: %s)", self._where, self.reason)
            self.reason = None
