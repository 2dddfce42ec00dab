"""RedisBus: the bus across replicas, on Redis pub/sub.

A process holds two Redis connections however many sockets it serves: one subscribed
(``RedisReceiver``: the topics its subscribers follow and its replica's command channel) and
one for publishing (``RedisSender``).

- Local first: a record published here reaches this process's subscribers at once, through an
  in-process ``MemoryBus`` (the same bounded queues), and when it comes back from Redis it is
  skipped. Other processes' records arrive from Redis into the same local queues. So a replica
  without Redis still serves the conversations it runs, live.
- ``publish`` never blocks: the sender writes an ordered outbound queue in pipelined batches
  and drops (and counts) while Redis is down.
- Live delivery may drop; the store does not. Records carry ``prev_seq``, so the next record a
  subscriber gets shows a gap, which it reads from the store. After a reconnect, both halves
  make sure a "next record" comes (see their modules), so a run that ended during an outage is
  not left short.
- Commands between replicas (``send_command``) go to the target replica's channel; the reply
  comes back on the sender's.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from .base import CommandHandler
from .codec import decode_records
from .commands import command_result, run_command
from .memory import MemoryBus, MemorySubscription
from .names import Names
from .redis_receiver import RedisReceiver
from .redis_sender import CONNECTION_FAILURES, RedisSender
from ..errors import Unavailable
from ..events import EventRecord

log = logging.getLogger(__name__)


class RedisSubscription:
    """A local bounded queue whose topic this process follows in Redis while it is open."""

    def __init__(self, bus: RedisBus, root_id: str, maxsize: int) -> None:
        self._bus = bus
        self.root_id = root_id
        self._queue = MemorySubscription(bus.local, root_id, maxsize)

    async def get(self) -> EventRecord:
        return await self._queue.get()

    def get_nowait(self) -> EventRecord | None:
        return self._queue.get_nowait()

    async def __aenter__(self) -> RedisSubscription:
        await self._queue.__aenter__()  # first: what this process publishes meanwhile is kept
        await self._bus.receiver.watch(self._bus.names.topic(self.root_id))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._queue.__aexit__(*exc)
        if self._bus.local.subscriber_count(self.root_id) == 0:
            await self._bus.receiver.unwatch(self._bus.names.topic(self.root_id))


class RedisBus:
    """``Bus`` over Redis at ``url`` (``redis://host:6379/0``); see the module docstring."""

    def __init__(self, url: str, *, prefix: str = "taskwire", outbound_limit: int = 100_000) -> None:
        self.url = url
        self.names = Names(prefix)
        self.origin = uuid.uuid4().hex
        """This process's tag on what it publishes."""
        self.local = MemoryBus()
        """This process's subscribers."""
        # No retries inside redis-py: the sender and receiver reconnect themselves, and must
        # know when they did.
        self._client = Redis.from_url(url, retry=Retry(NoBackoff(), 0), socket_timeout=10)
        self.sender = RedisSender(self._client, self.names, origin=self.origin, limit=outbound_limit)
        self.receiver = RedisReceiver(self._client, self.names, self._on_message)
        self._replica: str | None = None
        self._handler: CommandHandler | None = None
        self._replies: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    # -- Bus --------------------------------------------------------------------------------

    def publish(self, root_id: str, record: EventRecord) -> None:
        self.local.publish(root_id, record)
        if not self._closed:
            self.sender.send(record)

    def subscribe(self, root_id: str, *, maxsize: int) -> RedisSubscription:
        return RedisSubscription(self, root_id, maxsize)

    def subscriber_count(self, root_id: str | None = None) -> int:
        """This process's live subscriptions on ``root_id``'s topic (every topic when ``None``)."""
        return self.local.subscriber_count(root_id)

    def queue_depths(self) -> list[int]:
        """How many records each of this process's subscriptions has queued (metrics)."""
        return self.local.queue_depths()

    @property
    def healthy(self) -> bool:
        return self.sender.up.is_set() and self.receiver.up.is_set()

    @property
    def dropped(self) -> int:
        """Records this process could not send to Redis (it was down, or the queue was full)."""
        return self.sender.dropped

    async def start(self, *, wait: float = 2.0) -> None:
        """Start sending and receiving, waiting up to ``wait`` seconds for Redis. Both halves
        connect and reconnect on their own, so the server starts while Redis is down (and is
        not ``healthy`` until it answers)."""
        self._spawn(self.sender.run(), "redis-bus-sender")
        self._spawn(self.receiver.run(), "redis-bus-receiver")
        try:
            await asyncio.wait_for(asyncio.gather(self.sender.up.wait(), self.receiver.up.wait()), wait)
        except asyncio.TimeoutError:
            log.warning("redis bus: no answer from %s yet; live delivery across replicas waits for it",
                        self.url.rsplit("@", 1)[-1])

    async def close(self) -> None:
        """Send what is queued (for a moment, if Redis is up), then stop and disconnect."""
        if self._closed:
            return
        if self.healthy:
            try:
                await asyncio.wait_for(self.sender.drained(), 2.0)
            except asyncio.TimeoutError:
                pass
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._client.aclose()
        await self.local.close()

    async def flush(self) -> None:
        """Wait until what this process published before the call is in Redis, and what Redis
        sent it before then has been delivered here (for tests and benchmarks)."""
        await self.sender.drained()
        await self.receiver.barrier()

    # -- commands ---------------------------------------------------------------------------

    async def set_command_handler(self, replica_id: str, handler: CommandHandler) -> None:
        self._replica, self._handler = replica_id, handler
        await self.receiver.watch(self.names.replica(replica_id))

    async def send_command(self, replica_id: str, command: dict[str, Any], *, timeout: float) -> Any:
        if self._replica is None or self._handler is None:
            raise RuntimeError("call set_command_handler first: replies come back on this replica's channel")
        if replica_id == self._replica:
            return command_result(await run_command(self._handler, command))
        request_id = uuid.uuid4().hex
        reply: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._replies[request_id] = reply
        message = json.dumps({"type": "command", "id": request_id, "reply_to": self._replica, "command": command})
        try:
            try:
                listeners = await asyncio.wait_for(self._client.publish(self.names.replica(replica_id), message), timeout)
            except CONNECTION_FAILURES as exc:
                raise _unreachable(replica_id, f"the bus is down ({exc!r})") from exc
            if listeners == 0:
                raise _unreachable(replica_id, "it is not connected to the bus")
            try:
                answer = await asyncio.wait_for(reply, timeout)
            except asyncio.TimeoutError:
                raise _unreachable(replica_id, f"it did not answer within {timeout:g} s") from None
        finally:
            self._replies.pop(request_id, None)
        return command_result(answer)

    # -- receiving --------------------------------------------------------------------------

    def _on_message(self, channel: str, data: bytes) -> None:
        if self._replica is not None and channel == self.names.replica(self._replica):
            self._on_command_channel(json.loads(data))
            return
        origin, records = decode_records(data)
        if origin != self.origin:
            for record in records:
                self.local.publish(record.root_id, record)

    def _on_command_channel(self, message: dict[str, Any]) -> None:
        if message.get("type") == "reply":
            reply = self._replies.get(message.get("id", ""))
            if reply is not None and not reply.done():
                reply.set_result(message.get("reply") or {})
        elif message.get("type") == "command" and self._handler is not None:
            self._spawn(self._answer(message, self._handler), "redis-bus-command")

    async def _answer(self, message: dict[str, Any], handler: CommandHandler) -> None:
        reply = await run_command(handler, message.get("command") or {})
        answer = json.dumps({"type": "reply", "id": message.get("id"), "reply": reply})
        try:
            await self._client.publish(self.names.replica(message["reply_to"]), answer)
        except CONNECTION_FAILURES as exc:
            log.warning("redis bus: could not send a command's reply (%r); its sender times out", exc)

    def _spawn(self, coro: Any, name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _unreachable(replica_id: str, why: str) -> Unavailable:
    return Unavailable(f"cannot reach replica {replica_id!r}: {why}", code="replica_unreachable")
