"""The writer connection's lock: urgent waiters first, and no cancellation ever leaves it held."""

from __future__ import annotations

import asyncio

from taskwire.store.write_lock import WriteLock


async def _holders(lock: WriteLock, names: list[tuple[str, bool]], order: list[str]) -> list[asyncio.Task[None]]:
    async def take(name: str, urgent: bool) -> None:
        async with lock.hold(urgent=urgent):
            order.append(name)
            await asyncio.sleep(0)

    tasks = []
    for name, urgent in names:
        tasks.append(asyncio.create_task(take(name, urgent)))
        await asyncio.sleep(0)  # queued in this order
    return tasks


async def test_urgent_waiters_go_first_and_each_queue_keeps_its_order() -> None:
    lock, order = WriteLock(), []
    async with lock.hold():
        tasks = await _holders(lock, [("a", False), ("b", False), ("u1", True), ("c", False), ("u2", True)], order)
    await asyncio.gather(*tasks)
    assert order == ["u1", "u2", "a", "b", "c"]
    assert not lock.locked()


async def test_a_waiter_cancelled_while_it_waits_leaves_the_lock_to_the_next() -> None:
    lock, order = WriteLock(), []
    async with lock.hold():
        tasks = await _holders(lock, [("a", False), ("b", False)], order)
        tasks[0].cancel()
        await asyncio.sleep(0)
    await asyncio.gather(*tasks, return_exceptions=True)
    assert order == ["b"] and tasks[0].cancelled()
    assert not lock.locked()


async def test_a_waiter_cancelled_just_as_it_is_handed_the_lock_hands_it_on() -> None:
    lock, order = WriteLock(), []
    holder = lock.hold()
    await holder.__aenter__()
    tasks = await _holders(lock, [("a", True), ("b", False)], order)
    await holder.__aexit__(None, None, None)  # "a" is handed the lock...
    tasks[0].cancel()  # ...and cancelled before it runs
    await asyncio.gather(*tasks, return_exceptions=True)
    assert order == ["b"] and tasks[0].cancelled()
    assert not lock.locked()


async def test_a_holder_that_raises_lets_go() -> None:
    lock = WriteLock()
    try:
        async with lock.hold(urgent=True):
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert not lock.locked()
    async with lock.hold():
        assert lock.locked()
