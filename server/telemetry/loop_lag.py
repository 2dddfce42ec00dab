"""``LoopLag``: how late the event loop runs a callback it was asked to run on time.

A task sleeps ``interval`` seconds again and again; whatever it wakes up later than asked is
time the loop spent on something else without yielding (a long callback, a blocking call, a
collector's pause). Every agent, store write and socket shares that loop, so its lag is the
delay each of them sees at most. Read by ``/metrics``; a few microseconds per wake-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time

from .histogram import Histogram

LAG_SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
"""Buckets for the loop's lag: under a millisecond while the loop keeps up."""


class LoopLag:
    """Measures the running loop's lag every ``interval`` seconds once ``start``ed."""

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self.seconds = Histogram(LAG_SECONDS)
        self.max = 0.0
        """The largest lag seen since start."""
        self.gc_max = 0.0
        """The longest pause of the cyclic garbage collector since start (one cause of lag)."""
        self.gc_seconds = {0: 0.0, 1: 0.0, 2: 0.0}
        """Seconds spent in the collector since start, by generation collected."""
        self._gc_started = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._probe(), name="taskwire-loop-lag")
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        elif self._gc_started:
            pause = time.perf_counter() - self._gc_started
            self.gc_seconds[info["generation"]] += pause
            self.gc_max = max(self.gc_max, pause)

    async def stop(self) -> None:
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


    async def _probe(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time() + self.interval
            await asyncio.sleep(self.interval)
            lag = max(0.0, loop.time() - asked)
            self.seconds.observe(lag)
            if lag > self.max:
                self.max = lag
