"""Sub-agent labels: the deterministic names models see (``task-1``, ``task-1.2``), one per
sub-agent in the order its parent's calls spawned them, never repeated in a tree.

A host made for a new conversation (a root just created, any sub-agent) knows it has spawned
none. A root loaded from the store (after an unload, a restart, a takeover) has spawned as many
as the store holds: they are counted once, when it spawns its next one, so a follow-up's
sub-agents go on from ``task-N+1`` instead of naming a second ``task-1``.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable


class ChildLabels:
    """The labels one conversation gives the sub-agents it spawns."""

    def __init__(self, own_label: str, spawned: int | None) -> None:
        """``spawned``: how many it has spawned (``None``: unknown, counted in the store)."""
        self._prefix = f"{own_label}." if own_label else "task-"
        self._spawned = spawned
        self._counting: asyncio.Future[int] | None = None

    async def next(self, count_stored: Callable[[], Awaitable[int]]) -> str:
        """The next label. ``count_stored`` counts the sub-agents the store holds for this
        conversation; it is called at most once. Calls that wait for it resume in the order
        they came, so parallel calls are named in their order."""
        if self._spawned is None:
            if self._counting is None:
                self._counting = asyncio.ensure_future(count_stored())
            try:
                spawned = await asyncio.shield(self._counting)
            except BaseException:
                if self._counting.done():
                    self._counting = None  # failed: the next call counts again
                raise
            if self._spawned is None:
                self._spawned = spawned
        self._spawned += 1
        return f"{self._prefix}{self._spawned}"
