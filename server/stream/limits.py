"""Limits on live sockets: ``SubscriberLimit`` (how many live subscribers, sockets and SSE, one
server serves at once, and why the server closed them, for ``/metrics``) and ``WaitingRoom``
(how many sockets may wait to authenticate)."""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from typing import Generic, Hashable, Iterator, TypeVar

from taskwire_client.close_codes import CloseCode

T = TypeVar("T", bound=Hashable)


class SubscriberLimit:
    """Counts live subscribers against ``OH_MAX_SUBSCRIBERS``. One per app (``app.state``)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.active = 0
        self.closes: Counter[str] = Counter()
        """Subscribers closed by the server, by reason (``too_slow``, ``normal``, ...)."""

    def record_close(self, code: int) -> None:
        """Count a subscriber closed with ``code`` (a ``CloseCode``, or 1000/1011)."""
        try:
            reason = CloseCode(code).name.lower()
        except ValueError:
            reason = {1000: "normal", 1011: "internal_error"}.get(code, str(code))
        self.closes[reason] += 1

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


class WaitingRoom(Generic[T]):
    """Sockets waiting for their ``auth`` frame, at most ``OH_MAX_UNAUTHENTICATED_SOCKETS``.
    One per app (``app.state``).

    When the room is full, the one that has waited longest is turned away to make room: a
    client that authenticates as it connects (the browser sends its frame at once) gets in
    even while silent sockets crowd the room, and an attacker has to open sockets faster than
    real clients log in to keep one out."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._waiting: dict[T, None] = {}  # insertion order: the longest waiting first

    def __len__(self) -> int:
        return len(self._waiting)

    def enter(self, guest: T) -> T | None:
        """Let ``guest`` wait; returns whom it displaced (``guest`` itself when the limit is 0),
        who must leave at once, or ``None``."""
        if self.limit <= 0:
            return guest
        displaced = None
        if len(self._waiting) >= self.limit:
            displaced = next(iter(self._waiting))
            del self._waiting[displaced]
        self._waiting[guest] = None
        return displaced

    def leave(self, guest: T) -> None:
        """``guest`` stops waiting (authenticated, refused or gone); no error if displaced."""
        self._waiting.pop(guest, None)
