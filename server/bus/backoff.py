"""Delays between reconnect attempts: exponential, capped, with jitter (replicas that lost
Redis together do not knock on it together)."""

from __future__ import annotations

import random


class Backoff:
    """``next()`` gives the next delay in seconds; ``reset()`` after a success."""

    def __init__(self, first: float = 0.05, most: float = 5.0) -> None:
        self.first, self.most, self.delay = first, most, first

    def next(self) -> float:
        delay, self.delay = self.delay, min(self.most, self.delay * 2)
        return delay * random.uniform(0.5, 1.0)

    def reset(self) -> None:
        self.delay = self.first
