"""The bus suite runs once per backend: ``bus`` is a started bus of each kind in ``BACKENDS``.

A second backend adds one ``BACKENDS`` entry and one branch in ``bus`` (e.g. ``redis``: a
``RedisBus`` on the test server, skipped with ``need`` where none runs)."""

from __future__ import annotations

from typing import AsyncIterator

import pytest

from taskwire.bus import Bus
from taskwire.bus.memory import MemoryBus
from tests.bus.redis_pair import RedisPair
from tests.services import REDIS_URL, need_redis

BACKENDS = ["memory", "redis"]


@pytest.fixture(params=BACKENDS)
async def bus(request: pytest.FixtureRequest) -> AsyncIterator[Bus]:
    if request.param == "memory":
        opened: Bus = MemoryBus()
    elif request.param == "redis":
        # Two RedisBus instances (two replicas) as one: every record crosses Redis.
        need_redis()
        opened = RedisPair(REDIS_URL)  # type: ignore[assignment]
    else:
        raise AssertionError(f"no bus for backend {request.param!r}")
    await opened.start()
    try:
        yield opened
    finally:
        await opened.close()
