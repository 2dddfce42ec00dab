"""Two ``RedisBus`` instances (two replicas' worth) seen as one bus, so that every record the
contract suite publishes crosses Redis: published through one, delivered through the other."""

from __future__ import annotations

import uuid
from typing import Any

from taskwire.bus.redis import RedisBus, RedisSubscription
from taskwire.events import EventRecord


class RedisPair:
    """Publishes through ``publisher``, subscribes through ``subscriber``. Both use a prefix of
    their own on the shared Redis."""

    def __init__(self, url: str) -> None:
        prefix = f"taskwire-test-{uuid.uuid4().hex[:8]}"
        self.publisher = RedisBus(url, prefix=prefix)
        self.subscriber = RedisBus(url, prefix=prefix)

    def publish(self, root_id: str, record: EventRecord) -> None:
        self.publisher.publish(root_id, record)

    def subscribe(self, root_id: str, *, maxsize: int) -> _AfterPublished:
        return _AfterPublished(self, self.subscriber.subscribe(root_id, maxsize=maxsize))

    def subscriber_count(self, root_id: str | None = None) -> int:
        return self.subscriber.subscriber_count(root_id)

    @property
    def healthy(self) -> bool:
        return self.publisher.healthy and self.subscriber.healthy

    async def flush(self) -> None:
        await self.publisher.flush()  # in Redis: it has pushed them to the subscriber's connection
        await self.subscriber.flush()  # read and delivered there

    async def start(self) -> None:
        await self.publisher.start()
        await self.subscriber.start()

    async def close(self) -> None:
        await self.subscriber.close()
        await self.publisher.close()


class _AfterPublished:
    """A subscription that starts after what was published before it reached Redis: "before"
    across two processes means that."""

    def __init__(self, pair: RedisPair, inner: RedisSubscription) -> None:
        self._pair = pair
        self._inner = inner

    async def __aenter__(self) -> RedisSubscription:
        await self._pair.flush()
        return await self._inner.__aenter__()

    async def __aexit__(self, *exc: Any) -> None:
        await self._inner.__aexit__(*exc)
