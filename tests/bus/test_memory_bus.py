"""The bus contract: per-root topics, bounded queues, a publisher that never waits."""

from __future__ import annotations

import asyncio

import pytest

from taskwire.bus import Bus, Overflow
from taskwire.events import EventRecord, MessageEvent

WAIT = 30  # seconds: generous, only ever reached when something is broken


def record(root_id: str, seq: int) -> EventRecord:
    event = MessageEvent(content=f"message {seq}", seq=seq)
    return EventRecord(root_id, root_id, seq, event.id, event.kind, event.source, "t", None, None, event.to_json())


async def settle(bus: Bus) -> None:
    """Let a bus that delivers through the network catch up (a no-op for the memory bus)."""
    flush = getattr(bus, "flush", None)
    if flush is not None:
        await flush()


async def test_subscriber_gets_published_records_in_order(bus: Bus) -> None:
    async with bus.subscribe("root-a", maxsize=100) as sub:
        for seq in range(1, 51):
            bus.publish("root-a", record("root-a", seq))
        await settle(bus)
        got = [(await asyncio.wait_for(sub.get(), WAIT)).seq for _ in range(50)]
    assert got == list(range(1, 51))


async def test_waiting_subscriber_wakes_on_publish(bus: Bus) -> None:
    async with bus.subscribe("root-a", maxsize=10) as sub:
        waiting = asyncio.create_task(sub.get())
        await asyncio.sleep(0)
        assert not waiting.done()
        bus.publish("root-a", record("root-a", 1))
        assert (await asyncio.wait_for(waiting, WAIT)).seq == 1


async def test_get_nowait_returns_none_when_empty(bus: Bus) -> None:
    async with bus.subscribe("root-a", maxsize=10) as sub:
        assert sub.get_nowait() is None
        bus.publish("root-a", record("root-a", 1))
        await settle(bus)
        assert (sub.get_nowait() or record("x", 0)).seq == 1
        assert sub.get_nowait() is None


async def test_every_subscriber_of_a_topic_gets_every_record(bus: Bus) -> None:
    async with bus.subscribe("root-a", maxsize=10) as first, bus.subscribe("root-a", maxsize=10) as second:
        bus.publish("root-a", record("root-a", 1))
        await settle(bus)
        assert (await asyncio.wait_for(first.get(), WAIT)).seq == 1
        assert (await asyncio.wait_for(second.get(), WAIT)).seq == 1


async def test_topics_are_isolated(bus: Bus) -> None:
    async with bus.subscribe("root-a", maxsize=10) as a, bus.subscribe("root-b", maxsize=10) as b:
        bus.publish("root-b", record("root-b", 1))
        bus.publish("root-a", record("root-a", 2))
        await settle(bus)
        assert (await asyncio.wait_for(a.get(), WAIT)).root_id == "root-a"
        assert (await asyncio.wait_for(b.get(), WAIT)).root_id == "root-b"
        assert a.get_nowait() is None and b.get_nowait() is None


async def test_overflow_never_blocks_the_publisher(bus: Bus) -> None:
    async with bus.subscribe("root-a", maxsize=10) as slow:
        for seq in range(1, 100_001):
            bus.publish("root-a", record("root-a", seq))  # returns at once, every time
        await settle(bus)
        with pytest.raises(Overflow):
            await asyncio.wait_for(slow.get(), WAIT)
        with pytest.raises(Overflow):
            slow.get_nowait()


async def test_overflow_of_one_subscriber_spares_the_others(bus: Bus) -> None:
    async with bus.subscribe("root-a", maxsize=3) as slow, bus.subscribe("root-a", maxsize=100) as fast:
        for seq in range(1, 21):
            bus.publish("root-a", record("root-a", seq))
        await settle(bus)
        with pytest.raises(Overflow):
            await asyncio.wait_for(slow.get(), WAIT)
        assert [(await asyncio.wait_for(fast.get(), WAIT)).seq for _ in range(20)] == list(range(1, 21))


async def test_overflow_wakes_a_waiting_subscriber(bus: Bus) -> None:
    async with bus.subscribe("root-a", maxsize=2) as sub:
        waiting = asyncio.create_task(sub.get())
        await asyncio.sleep(0)
        for seq in range(1, 10):
            bus.publish("root-a", record("root-a", seq))
        await settle(bus)
        with pytest.raises(Overflow):
            await asyncio.wait_for(waiting, WAIT)  # a subscriber a queue behind stops at once


async def test_records_published_before_subscribing_are_not_delivered(bus: Bus) -> None:
    bus.publish("root-a", record("root-a", 1))
    async with bus.subscribe("root-a", maxsize=10) as sub:
        bus.publish("root-a", record("root-a", 2))
        await settle(bus)
        assert (await asyncio.wait_for(sub.get(), WAIT)).seq == 2


async def test_unsubscribing_removes_the_subscription_and_its_empty_topic(bus: Bus) -> None:
    count = getattr(bus, "subscriber_count")
    async with bus.subscribe("root-a", maxsize=10):
        async with bus.subscribe("root-a", maxsize=10):
            assert count("root-a") == 2
        assert count("root-a") == 1
        bus.publish("root-a", record("root-a", 1))
    assert count("root-a") == 0
    assert count() == 0
    bus.publish("root-a", record("root-a", 2))  # nobody listens: nothing is kept


async def test_memory_bus_is_always_healthy(bus: Bus) -> None:
    assert bus.healthy
