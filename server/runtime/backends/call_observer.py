"""``HostCallObserver``: a native agent's model calls report their retries to its stream and
wait out their back-offs there, where a pause or an interrupt reaches them.

The model clients (``server/llm``) know nothing of the runtime; they take a ``CallObserver``
and this is the runtime's.
"""

from __future__ import annotations

import asyncio

from ...events import LLMRetryEvent
from ...llm import RetryNotice
from .base import AgentHost

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
        """Sleep ``seconds``, or less if the run is asked to pause meanwhile (then ``False``).
        An interrupt or a cancel cancels the wait itself."""
        if self.host.pause_requested:
            return False
        pause = asyncio.ensure_future(self.host.wait_for_pause())
        try:
            done, _ = await asyncio.wait({pause}, timeout=seconds)
        finally:
            pause.cancel()
        return not done
