"""``Histogram``: bucket counts kept as plain integers, read by ``/metrics`` when scraped.

Cheaper on a hot path than a client library's histogram (no lock, no label lookup): one
bisect and two additions per observation.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Sequence

APPEND_SECONDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
"""Buckets for the store's append latency: group commits take a millisecond or a few."""


class Histogram:
    """Observations counted in buckets with upper bounds ``bounds`` (and one past the last)."""

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(sorted(bounds))
        self._counts = [0] * (len(self.bounds) + 1)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self._counts[bisect_left(self.bounds, value)] += 1
        self.sum += value
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """``(le, count of observations <= le)`` per bucket, ``+Inf`` last (Prometheus form)."""
        total, buckets = 0, []
        for bound, count in zip((*self.bounds, float("inf")), self._counts):
            total += count
            buckets.append(("+Inf" if bound == float("inf") else repr(bound), total))
        return buckets
