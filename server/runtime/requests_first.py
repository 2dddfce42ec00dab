"""Requests first: agent steps give way to the API's requests on the one event loop.

Every agent step (a model's answer acted upon: its events built and stored, its tools started)
costs the loop CPU, and under load hundreds of them are ready at once. A request that arrives
then (a new conversation, a message, a socket opening, a page, a permission's answer) would wait
behind all of them, turn after turn of the loop. So the API counts the requests it has not
answered yet (``arrive``: from arrival to the start of the response, or a socket's first
frame), and an agent about to act on a model's answer first waits (``step``) until none is in
flight. Steps already under way go on (nothing is cut in the middle), so a request waits at
most for the steps that were running when it came, not for the ones queued after it.

The wait is bounded (``max_wait``): a request that itself waits on an agent, or a steady
stream of requests, slows agents down but never stops them. A step cancelled while it waits
leaves nothing behind: the count belongs to the requests alone.
"""

from __future__ import annotations

import asyncio
from typing import Callable


class RequestsFirst:
    """The count of unanswered API requests, and the gate agent steps pass (module docstring)."""

    def __init__(self, max_wait: float = 0.25, max_hold: float = 1.0) -> None:
        self.max_wait = max_wait
        """The longest a step waits for requests to be answered, seconds."""
        self.max_hold = max_hold
        """The longest one request counts, seconds: a client that never finishes its request
        (a body sent a byte at a time, a socket that never authenticates) cannot hold the gate."""
        self._in_flight = 0
        # Resolved when the count falls to 0; one for every step waiting meanwhile (an Event
        # and wait_for would make a task per waiting step: hundreds, each time a socket opens).
        self._cleared: asyncio.Future[None] | None = None
        self.waits = 0
        """Steps that found a request in flight and waited (a figure for benchmarks)."""

    @property
    def in_flight(self) -> int:
        """Requests arrived and not yet answered."""
        return self._in_flight

    def arrive(self) -> Callable[[], None]:
        """Count one request until the function returned is called (once it is answered; a
        second call does nothing) or ``max_hold`` has passed, whichever comes first."""
        self._in_flight += 1
        counted = True

        def answered() -> None:
            nonlocal counted
            if counted:
                counted = False
                timer.cancel()
                self._in_flight -= 1
                if self._in_flight == 0 and self._cleared is not None:
                    self._cleared.set_result(None)
                    self._cleared = None

        timer = asyncio.get_running_loop().call_later(self.max_hold, answered)
        return answered

    async def step(self) -> None:
        """Return once no request is in flight, or after ``max_wait`` at most."""
        if self._in_flight == 0:
            return
        self.waits += 1
        if self._cleared is None:
            self._cleared = asyncio.get_running_loop().create_future()
        # wait, not await: a step cancelled here must not cancel the future the others share
        await asyncio.wait({self._cleared}, timeout=self.max_wait)
