"""What only the Redis bus promises: delivery across processes that survives Redis going away,
and commands between replicas."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from taskwire.bus.redis import RedisBus
from taskwire.errors import ConversationRunning, SubagentNotFound, TaskwireError, Unavailable
from taskwire.events import EventRecord, MessageEvent
from tests.services import REDIS_URL, need_redis, private_redis, wait_until

WAIT = 30  # seconds: generous, only ever reached when something is broken


def record(root_id: str, seq: int) -> EventRecord:
    event = MessageEvent(content=f"message {seq}", seq=seq)
    return EventRecord(root_id, root_id, seq, event.id, event.kind, event.source, "t", None, None,
                       event.to_json(), prev_seq=seq - 1 or None)


@pytest.fixture
async def replicas() -> AsyncIterator[tuple[RedisBus, RedisBus]]:
    """Two replicas' buses on the shared Redis, under a prefix of their own."""
    need_redis()
    prefix = f"taskwire-test-{uuid.uuid4().hex[:8]}"
    a, b = RedisBus(REDIS_URL, prefix=prefix), RedisBus(REDIS_URL, prefix=prefix)
    await a.start()
    await b.start()
    yield a, b
    await b.close()
    await a.close()


async def test_a_record_reaches_this_process_once_and_the_other_once(replicas) -> None:
    a, b = replicas
    async with a.subscribe("root", maxsize=10) as here, b.subscribe("root", maxsize=10) as there:
        a.publish("root", record("root", 1))
        await a.flush()
        await b.flush()
        await a.flush()  # its own record came back from Redis meanwhile, and was skipped
        assert (await asyncio.wait_for(here.get(), WAIT)).seq == 1
        assert (await asyncio.wait_for(there.get(), WAIT)).seq == 1
        assert here.get_nowait() is None and there.get_nowait() is None


async def test_a_command_runs_on_the_replica_it_names(replicas) -> None:
    a, b = replicas
    seen: list[tuple[str, dict]] = []

    def handler_for(name: str):
        async def handle(command: dict) -> dict:
            seen.append((name, command))
            return {"ran_on": name, "echo": command["value"]}

        return handle

    await a.set_command_handler("replica-a", handler_for("a"))
    await b.set_command_handler("replica-b", handler_for("b"))
    assert await a.send_command("replica-b", {"value": 7}, timeout=WAIT) == {"ran_on": "b", "echo": 7}
    assert await b.send_command("replica-b", {"value": 8}, timeout=WAIT) == {"ran_on": "b", "echo": 8}
    assert seen == [("b", {"value": 7}), ("b", {"value": 8})]


async def test_an_error_on_the_owner_is_raised_as_the_same_error_here(replicas) -> None:
    a, b = replicas

    async def handle(command: dict) -> None:
        if command["what"] == "running":
            raise ConversationRunning("c-1")
        if command["what"] == "subagent":
            raise SubagentNotFound("s-1")
        raise KeyError("a bug")

    await a.set_command_handler("replica-a", handle)
    await b.set_command_handler("replica-b", handle)
    with pytest.raises(ConversationRunning) as running:
        await a.send_command("replica-b", {"what": "running"}, timeout=WAIT)
    assert running.value.status_code == 409 and "'c-1' is already running" in running.value.detail
    with pytest.raises(SubagentNotFound):
        await a.send_command("replica-b", {"what": "subagent"}, timeout=WAIT)
    with pytest.raises(TaskwireError) as bug:
        await a.send_command("replica-b", {"what": "bug"}, timeout=WAIT)
    assert bug.value.status_code == 500 and bug.value.code == "internal_error"


async def test_a_command_to_a_replica_that_is_not_listening_is_unavailable(replicas) -> None:
    a, _ = replicas

    async def handle(command: dict) -> None:
        return None

    await a.set_command_handler("replica-a", handle)
    with pytest.raises(Unavailable, match="not connected to the bus"):
        await a.send_command("replica-gone", {}, timeout=WAIT)


async def test_the_bus_starts_without_redis_and_recovers_when_it_comes(tmp_path: Path) -> None:
    async with private_redis(tmp_path) as redis:
        await redis.stop()
        bus = RedisBus(redis.url)
        await bus.start(wait=0.2)
        try:
            assert not bus.healthy
            async with bus.subscribe("root", maxsize=10) as sub:  # does not wait for Redis
                bus.publish("root", record("root", 1))  # returns at once; live here, dropped there
                assert bus.dropped == 1
                assert (await asyncio.wait_for(sub.get(), WAIT)).seq == 1
                await redis.start()
                await wait_until(lambda: bus.healthy, timeout=WAIT, what="the bus to reconnect")
        finally:
            await bus.close()


async def test_after_redis_restarts_a_subscriber_learns_how_far_the_topic_got(tmp_path: Path) -> None:
    async with private_redis(tmp_path) as redis:
        publisher, subscriber = RedisBus(redis.url), RedisBus(redis.url)
        await publisher.start()
        await subscriber.start()
        try:
            async with subscriber.subscribe("root", maxsize=100) as sub:
                for seq in (1, 2):
                    publisher.publish("root", record("root", seq))
                assert [(await asyncio.wait_for(sub.get(), WAIT)).seq for _ in range(2)] == [1, 2]
                await redis.stop()  # a crash: its memory (and the last-record keys) is gone
                for seq in (3, 4, 5):
                    publisher.publish("root", record("root", seq))  # dropped: nothing is connected
                await redis.start()
                # The topic's last record comes again; its prev_seq tells the subscriber to read
                # 3..4 from the store.
                last = await asyncio.wait_for(sub.get(), WAIT)
                assert (last.seq, last.prev_seq) == (5, 4)
                await wait_until(lambda: publisher.healthy and subscriber.healthy, timeout=WAIT,
                                 what="both buses to reconnect")
                publisher.publish("root", record("root", 6))
                assert (await asyncio.wait_for(sub.get(), WAIT)).seq in (5, 6)  # 5 again is harmless
        finally:
            await subscriber.close()
            await publisher.close()


async def test_a_subscriber_cut_off_gets_what_was_published_meanwhile(tmp_path: Path) -> None:
    # The publisher never lost Redis, so it sends nothing again: the last-record key covers it.
    async with private_redis(tmp_path) as redis:
        publisher, subscriber = RedisBus(redis.url), RedisBus(redis.url)
        await publisher.start()
        await subscriber.start()
        try:
            async with subscriber.subscribe("root", maxsize=100) as sub:
                publisher.publish("root", record("root", 1))
                assert (await asyncio.wait_for(sub.get(), WAIT)).seq == 1
                await _cut_subscribers(redis.url)
                publisher.publish("root", record("root", 2))  # most likely while it reconnects
                await publisher.flush()
                seqs = [(await asyncio.wait_for(sub.get(), WAIT)).seq]
                while seqs[-1] != 2:
                    seqs.append((await asyncio.wait_for(sub.get(), WAIT)).seq)
                assert set(seqs) <= {1, 2}  # 1 may come again (the key, read before 2 was set)
        finally:
            await subscriber.close()
            await publisher.close()


async def _cut_subscribers(url: str) -> None:
    """Have Redis close every subscribed connection, as a broken link would."""
    admin = Redis.from_url(url)
    try:
        for client in await admin.client_list(_type="pubsub"):
            await admin.client_kill_filter(_id=client["id"])
    finally:
        await admin.aclose()
