"""``HostCallObserver``: a native agent's model calls report their retries to its stream and
wait out their back-offs there, where a pause or an interrupt reaches them.

The model clients (``server/llm``) know nothing of the runtime; they take a ``CallObserver``
and this is the runtime's.
"""

from __future__ import annotations

import asyncio
import time

from ...events import LLMRetryEvent
from ...llm import RetryNotice
from .base import AgentHost

PAUSE_CHECK_SECONDS = 0.1
"""How often a back-off looks whether its run was asked to pause (an interrupt or a
cancel needs no look: it cancels the wait itself)."""


class HostCallObserver:
    """Implements ``CallObserver`` for one agent (``host``)."""

    __slots__ = ("host",)

    def __init__(self, host: AgentHost) -> None:
        self.host = host

    async def retrying(self, notice: RetryNotice) -> None:
        """An ``LLMRetryEvent`` in the agent's own stream (stamped and forwarded like the rest)."""
        await self.host.emit(
            LLMRetryEvent(
                attempt=notice.attempt,
                max_attempts=notice.max_attempts,
                delay=round(notice.delay, 3),
                reason=notice.reason,
                error=notice.error,
                status_code=notice.status,
                discard_text=notice.discard_text or None,
            )
        )

    async def wait(self, seconds: float) -> bool:
        """Sleep ``seconds``, or less if the run is asked to pause meanwhile (then ``False``)."""
        deadline = time.monotonic() + seconds
        while not self.host.pause_requested:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            await asyncio.sleep(min(left, PAUSE_CHECK_SECONDS))
        return False
