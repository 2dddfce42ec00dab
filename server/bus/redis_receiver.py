"""RedisReceiver: the subscribing half of ``RedisBus``: one pub/sub connection per process.

It subscribes to the channels this process watches (the topics its subscribers follow, its
replica's command channel) and hands each message to the bus. On every (re)connect it
subscribes again, waits for Redis to confirm, then reads each watched topic's last record
(kept by ``RedisSender``) and hands it over as well: a subscriber that lost records while the
connection was down sees from it how far the topic got, and reads the gap from the store.
A silent connection is pinged; one that stops answering is replaced.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any, Callable

from redis.asyncio import Redis
from redis.asyncio.client import PubSub

from .backoff import Backoff
from .names import Names
from .redis_sender import CONNECTION_FAILURES

CLOSE_WAIT = 5.0
"""Seconds a lost subscriber connection may take to close before the reconnect goes on."""

log = logging.getLogger(__name__)

SUBSCRIBE_WAIT = 5.0
"""Seconds to wait for Redis to confirm a subscription; past it the reconnect catch-up covers."""
PING_EVERY = 5.0
"""Seconds of silence before the connection is pinged; two unanswered and it is replaced."""

OnMessage = Callable[[str, bytes], None]
"""Called with a message's channel and data."""


class RedisReceiver:
    """Keeps one subscribed connection; see the module docstring."""

    def __init__(self, client: Redis, names: Names, on_message: OnMessage) -> None:
        self._client = client
        self._names = names
        self._on_message = on_message
        self._pubsub: PubSub | None = None
        self._wanted: set[str] = set()
        self._confirmed: set[str] = set()
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}
        self._pongs: dict[str, asyncio.Future[None]] = {}
        self.up = asyncio.Event()
        """Set while the subscribed connection works."""
        self.reconnects = 0
        """Times the subscribed connection came back after it was lost."""

    async def watch(self, channel: str) -> None:
        """Subscribe to ``channel`` and wait (briefly) until Redis confirms it, so messages
        published after this returns are received. Returns at once while Redis is down."""
        if channel not in self._wanted:
            self._wanted.add(channel)
            if self._pubsub is not None:
                try:
                    await self._pubsub.subscribe(channel)
                except CONNECTION_FAILURES:
                    return  # the reconnect subscribes to every wanted channel
        if self._pubsub is None or channel in self._confirmed:
            return
        confirmed = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(channel, []).append(confirmed)
        try:
            await asyncio.wait_for(confirmed, SUBSCRIBE_WAIT)
        except asyncio.TimeoutError:
            pass

    async def unwatch(self, channel: str) -> None:
        self._wanted.discard(channel)
        self._confirmed.discard(channel)
        if self._pubsub is not None:
            try:
                await self._pubsub.unsubscribe(channel)
            except CONNECTION_FAILURES:
                pass

    async def barrier(self) -> None:
        """Wait until every message Redis sent this connection before now has been handed
        over (a ping's answer comes after them). Returns at once while Redis is down."""
        pubsub = self._pubsub
        if pubsub is None:
            return
        token = uuid.uuid4().hex
        pong = asyncio.get_running_loop().create_future()
        self._pongs[token] = pong
        try:
            await pubsub.ping(token)
            await asyncio.wait_for(pong, 2 * SUBSCRIBE_WAIT)
        except (*CONNECTION_FAILURES, ConnectionError):
            pass
        finally:
            self._pongs.pop(token, None)

    async def run(self) -> None:
        """Connect, receive, and reconnect with backoff, until cancelled."""
        backoff = Backoff()
        lost = False
        while True:
            pubsub = self._client.pubsub()
            try:
                await self._subscribe_all(pubsub)
                await self._catch_up()
                if lost:
                    self.reconnects += 1
                self.up.set()
                backoff.reset()
                await self._read(pubsub)
            except CONNECTION_FAILURES as exc:
                if self.up.is_set():
                    log.warning("redis bus: subscriber connection lost (%r); reconnecting", exc)
            except Exception:  # anything else: say so, and reconnect all the same
                log.exception("redis bus: the subscriber failed; reconnecting")
            finally:
                lost = lost or self.up.is_set()
                self.up.clear()
                self._pubsub = None
                self._confirmed.clear()
                for pong in self._pongs.values():
                    if not pong.done():
                        pong.set_exception(ConnectionError("the subscriber connection was lost"))
                await _close_quietly(pubsub)
            await asyncio.sleep(backoff.next())

    async def _subscribe_all(self, pubsub: PubSub) -> None:
        channels = set(self._wanted)
        if channels:
            await pubsub.subscribe(*sorted(channels))
        else:
            await pubsub.ping()
        while not channels <= self._confirmed:
            message = await asyncio.wait_for(pubsub.get_message(timeout=None), 2 * SUBSCRIBE_WAIT)
            if message is not None:
                self._handle(message)
        self._pubsub = pubsub
        late = self._wanted - channels  # watched while this connection was being set up
        if late:
            await pubsub.subscribe(*sorted(late))

    async def _catch_up(self) -> None:
        # After the confirmations: a record published from now on arrives live.
        roots = [root for root in map(self._names.root_of, sorted(self._wanted)) if root is not None]
        if not roots:
            return
        payloads = await self._client.mget([self._names.last(root) for root in roots])
        for root, payload in zip(roots, payloads):
            if payload is not None:
                self._deliver(self._names.topic(root), payload)

    async def _read(self, pubsub: PubSub) -> None:
        unanswered = 0
        while True:
            message = await pubsub.get_message(timeout=PING_EVERY)
            if message is None:
                if unanswered >= 2:
                    raise ConnectionError(f"Redis did not answer a ping in {2 * PING_EVERY:g} s")
                unanswered += 1
                await pubsub.ping()
                continue
            unanswered = 0
            self._handle(message)

    def _handle(self, message: dict[str, Any]) -> None:
        kind, channel = message["type"], _text(message.get("channel"))
        if kind == "message":
            self._deliver(channel, message["data"])
        elif kind == "subscribe":
            self._confirmed.add(channel)
            for waiter in self._waiters.pop(channel, []):
                if not waiter.done():
                    waiter.set_result(None)
        elif kind == "pong":
            pong = self._pongs.pop(_text(message.get("data")), None)
            if pong is not None and not pong.done():
                pong.set_result(None)

    def _deliver(self, channel: str, data: bytes) -> None:
        try:
            self._on_message(channel, data)
        except Exception:  # a malformed message must not stop the receiver
            log.exception("redis bus: could not handle a message on %r", channel)


async def _close_quietly(pubsub: PubSub) -> None:
    # Closing a connection Redis dropped may raise or hang; either would end the reconnect loop.
    try:
        await asyncio.wait_for(pubsub.aclose(), CLOSE_WAIT)
    except Exception as exc:
        log.debug("redis bus: closing the old subscriber connection: %r", exc)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")
