"""Filling in the search text of events stored before it was kept: what both backends share.

The text is derived in Python (``taskwire.events.body_text.stored_body_text``), so a migration
that adds it cannot be one SQL statement: each backend reads its events in batches, computes
their text, and writes it back, one transaction a batch, keeping a mark of where it is so a
restart goes on from there. A million events take a while (BENCHMARKS.md), and the server
does not serve until the fill is done, so it says so in the log as it goes.
"""

from __future__ import annotations

import logging
import time

log = logging.getLogger(__name__)

FILL_BATCH = 5_000
"""Events filled per transaction."""


class FillProgress:
    """Says, in the log, how a fill of the search text goes: at its start when it has work,
    every few seconds, and at its end (shared by the backends)."""

    EVERY = 5.0

    def __init__(self, where: str, total: int) -> None:
        self.where, self.total, self.filled = where, total, 0
        self.started = self.last = time.monotonic()
        if total:
            log.warning(
                "filling in the search text of %d stored events in %s (once, after an upgrade); "
                "the server starts when it is done", total, where,
            )

    def add(self, count: int) -> None:
        self.filled += count
        now = time.monotonic()
        if now - self.last >= self.EVERY and self.filled < self.total:
            self.last = now
            rate = self.filled / (now - self.started)
            log.warning(
                "search text: %d of %d events filled in %s, about %.0f s left",
                self.filled, self.total, self.where, (self.total - self.filled) / rate,
            )

    def done(self) -> None:
        if self.total:
            log.warning(
                "search text: %d events filled in %s in %.1f s",
                self.filled, self.where, time.monotonic() - self.started,
            )
