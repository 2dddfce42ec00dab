"""``OwnedWrites``: a write the store owns ends whole whatever happens to whoever awaits it."""

from __future__ import annotations

import asyncio

import pytest

from taskwire.store.owned import OwnedWrites


async def test_a_cancelled_caller_waits_for_the_write_then_sees_its_cancellation() -> None:
    owned = OwnedWrites("test")
    gate, steps = asyncio.Event(), []

    async def write() -> str:
        steps.append("begin")
        await gate.wait()
        steps.append("commit")
        return "stored"

    caller = asyncio.create_task(owned.run(write()))
    await asyncio.sleep(0)
    caller.cancel()
    await asyncio.sleep(0.01)
    assert not caller.done()  # still waiting: the write is half way
    gate.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert steps == ["begin", "commit"]


async def test_cancelled_twice_the_caller_leaves_and_the_write_still_ends() -> None:
    owned = OwnedWrites("test")
    gate, steps = asyncio.Event(), []

    async def write() -> None:
        await gate.wait()
        steps.append("commit")

    caller = asyncio.create_task(owned.run(write()))
    await asyncio.sleep(0)
    caller.cancel()
    await asyncio.sleep(0)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert steps == []
    gate.set()
    await owned.drain()  # what a store's close waits for
    assert steps == ["commit"]


async def test_a_failed_write_fails_its_caller() -> None:
    owned = OwnedWrites("test")

    async def write() -> None:
        raise ValueError("duplicate")

    with pytest.raises(ValueError, match="duplicate"):
        await owned.run(write())
    await owned.drain()
