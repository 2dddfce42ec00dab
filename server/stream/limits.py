"""``SubscriberLimit``: how many live subscribers (sockets, SSE) one server serves at once."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


class SubscriberLimit:
    """Counts live subscribers against ``OH_MAX_SUBSCRIBERS``. One per app (``app.state``)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.active = 0

    @contextmanager
    def claim(self) -> Iterator[bool]:
        """Holds a place while the block runs; yields False (holding nothing) when all are taken."""
        if self.active >= self.limit:
            yield False
            return
        self.active += 1
        try:
            yield True
        finally:
            self.active -= 1
