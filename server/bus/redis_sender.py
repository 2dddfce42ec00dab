"""RedisSender: the publishing half of ``RedisBus``.

``send`` never blocks: records go on an ordered outbound queue that one task writes to Redis
in pipelined batches, a topic's records of a batch in as few messages as fit (one process's
records of a topic stay in publish order). While Redis is down, records are dropped and
counted.

Whatever was lost (dropped here, or sent just before Redis died and never delivered), the
subscribers must learn how far each topic got, or a run that ended during the outage would
leave them short. So the sender remembers the last stored record it published per topic, and
on every (re)connect publishes those again, and each batch stores each topic's last record
under a key, which a reconnecting ``RedisReceiver`` reads. The key is written before the
messages: a subscriber that subscribes between the two reads the key, one that subscribes
before gets the messages. Subscribers drop what they already have (``seq``) and read the rest
from the store.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict, deque

from redis.asyncio import Redis
from redis.exceptions import RedisError

from .backoff import Backoff
from .codec import encode_records
from .names import Names
from ..events import EventRecord

log = logging.getLogger(__name__)

CONNECTION_FAILURES = (RedisError, OSError, asyncio.TimeoutError)
"""What a lost or unusable Redis connection raises: reconnect, don't crash."""


class RedisSender:
    """Writes records to their topics through ``client``; see the module docstring."""

    def __init__(
        self, client: Redis, names: Names, *, origin: str, limit: int = 100_000, batch: int = 1000,
        last_ttl: int = 7 * 86400, latest_topics: int = 1000,
    ) -> None:
        self._client = client
        self._names = names
        self._origin = origin
        self._limit, self._batch, self._last_ttl = limit, batch, last_ttl
        self._outbound: deque[EventRecord] = deque()
        # Per topic, the last stored record published here (the most recent topics only).
        self._latest: OrderedDict[str, EventRecord] = OrderedDict()
        self._latest_topics = latest_topics
        self._wakeup = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()
        self.up = asyncio.Event()
        """Set while the publishing connection works."""
        self.dropped = 0
        """Records not sent because Redis was down or the outbound queue was full."""
        self.reconnects = 0
        """Times the publishing connection came back after it was lost."""

    def send(self, record: EventRecord) -> None:
        """Queue ``record`` for Redis; never blocks (drops and counts instead)."""
        if record.seq is not None:
            self._latest[record.root_id] = record
            self._latest.move_to_end(record.root_id)
            if len(self._latest) > self._latest_topics:
                self._latest.popitem(last=False)
        if not self.up.is_set() or len(self._outbound) >= self._limit:
            self.dropped += 1
            return
        self._outbound.append(record)
        self._drained.clear()
        self._wakeup.set()

    async def drained(self) -> None:
        """Wait until everything queued so far has been written (or dropped)."""
        while self._outbound or not self._drained.is_set():
            await self._drained.wait()

    async def run(self) -> None:
        """Connect, send, and reconnect with backoff, until cancelled."""
        backoff = Backoff()
        lost = False
        while True:
            try:
                await self._client.ping()
                if self._latest:
                    await self._write(list(self._latest.values()))
                if lost:
                    self.reconnects += 1
                self.up.set()
                backoff.reset()
                await self._send_queued()
            except Exception as exc:  # a lost connection, or anything else: reconnect all the same
                if not isinstance(exc, CONNECTION_FAILURES):
                    log.exception("redis bus: the publisher failed; reconnecting")
                elif self.up.is_set():
                    log.warning("redis bus: publishing connection lost (%r); reconnecting", exc)
                lost = lost or self.up.is_set()
                self.up.clear()
                self.dropped += len(self._outbound)
                self._outbound.clear()
                self._drained.set()
            await asyncio.sleep(backoff.next())

    async def _send_queued(self) -> None:
        while True:
            if not self._outbound:
                self._drained.set()
                await self._wakeup.wait()
                self._wakeup.clear()
                continue
            batch = [self._outbound.popleft() for _ in range(min(self._batch, len(self._outbound)))]
            try:
                await self._write(batch)
            except BaseException:
                self.dropped += len(batch)
                raise

    async def _write(self, records: list[EventRecord]) -> None:
        by_topic: dict[str, list[EventRecord]] = {}
        for record in records:
            by_topic.setdefault(record.root_id, []).append(record)
        pipe = self._client.pipeline(transaction=False)
        for root_id, topic_records in by_topic.items():  # keys first: see the module docstring
            stored = [record for record in topic_records if record.seq is not None]
            if stored:
                (last,) = encode_records(self._origin, stored[-1:])
                pipe.set(self._names.last(root_id), last, ex=self._last_ttl)
        for root_id, topic_records in by_topic.items():
            for message in encode_records(self._origin, topic_records):
                pipe.publish(self._names.topic(root_id), message)
        await pipe.execute()
