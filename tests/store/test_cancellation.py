"""A caller cancelled at any await of any store write leaves it whole or absent, never half
done, and the store goes on writing and reading. Each test cancels at the 1st await, then the
2nd, ... until the write completes without reaching one (``tests/faults.py``), on both stores."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from taskwire.events import MessageEvent
from taskwire.store import ConversationRecord, EventQuery, Store, open_store
from taskwire.store.leases import leases_for
from taskwire.store.postgres import PostgresStore
from taskwire.store.sqlite import SQLiteStore
from tests.faults import cancel_at_every_await
from tests.services import postgres_schema_url
from tests.store.conftest import OpenStore

_ids = itertools.count()


def message(text: str) -> MessageEvent:
    return MessageEvent(role="user", source="user", content=text)


async def assert_store_works(store: Store) -> None:
    """A fresh conversation and an event go in and come back."""
    n = next(_ids)
    record = ConversationRecord(id=f"probe-{n}", root_id=f"probe-{n}")
    await store.create_conversation(record)
    updated = await store.update_conversation(record.id, title="probed")
    stored = await store.append(record.id, record.id, message(f"probe {n}"))
    assert (await store.get_conversation(record.id)) == updated
    assert (await store.get(stored.id)) == stored
    assert await store.count(EventQuery(root_id=record.id)) == 1


async def test_a_cancelled_append_is_stored_whole_and_the_next_works(store: Store) -> None:
    events: dict[int, Any] = {}

    def write(n: int) -> Any:
        events[n] = message(f"event {n}")
        return store.append("root", "root", events[n])

    async def check(n: int, completed: bool) -> None:
        await store.flush()  # once queued, it is written even though its caller left
        record = await store.get(events[n].id)
        assert record is not None and record.seq is not None
        page = await store.search(EventQuery(root_id="root"))
        assert [r.id for r in page.items] == [events[k].id for k in sorted(events)]
        assert [r.seq for r in page.items] == sorted({r.seq for r in page.items})
        await assert_store_works(store)

    assert await cancel_at_every_await(write, check) >= 2


async def test_a_cancelled_create_or_update_is_whole_or_absent(store: Store) -> None:
    records: dict[int, ConversationRecord] = {}

    def create(n: int) -> Any:
        records[n] = ConversationRecord(id=f"conv-{n}", root_id=f"conv-{n}", title=f"title {n}")
        return store.create_conversation(records[n])

    async def check_created(n: int, completed: bool) -> None:
        found = await store.get_conversation(records[n].id)
        assert found is None or found == records[n]
        if completed:
            assert found == records[n]
        await assert_store_works(store)

    assert await cancel_at_every_await(create, check_created) >= 2

    target = records[1].id if await store.get_conversation(records[1].id) else records[max(records)].id
    before: dict[str, Any] = {"record": await store.get_conversation(target)}

    def update(n: int) -> Any:
        return store.update_conversation(target, title=f"retitled {n}", status="paused" if n % 2 else "running")

    async def check_updated(n: int, completed: bool) -> None:
        found = await store.get_conversation(target)
        assert found is not None
        old = before["record"]
        # Whole or absent: title and status change together, or neither does.
        assert (found.title, found.status) in {(old.title, old.status), (f"retitled {n}", "paused" if n % 2 else "running")}
        if completed:
            assert found.title == f"retitled {n}"
        before["record"] = found
        await assert_store_works(store)

    assert await cancel_at_every_await(update, check_updated) >= 2


async def test_a_cancelled_delete_removes_the_whole_tree_or_nothing(store: Store) -> None:
    roots: dict[int, str] = {}

    async def planted(n: int) -> str:
        root = f"doomed-{n}"
        await store.create_conversation(ConversationRecord(id=root, root_id=root))
        await store.create_conversation(ConversationRecord(id=f"{root}-sub", root_id=root, parent_id=root))
        for k in range(5):
            await store.append(root if k % 2 else f"{root}-sub", root, message(f"{root} {k}"))
        return root

    async def delete(n: int) -> None:
        roots[n] = await planted(n)
        await store.delete_conversation(roots[n])

    def write(n: int) -> Any:
        return delete(n)

    async def check(n: int, completed: bool) -> None:
        if n not in roots:
            return  # cancelled while planting: nothing was deleted yet
        root = roots[n]
        tree = await store.tree(root)
        events = await store.count(EventQuery(root_id=root))
        assert (len(tree), events) in {(0, 0), (2, 5)}, f"half deleted: {len(tree)} records, {events} events"
        if completed:
            assert (len(tree), events) == (0, 0)
        await assert_store_works(store)

    assert await cancel_at_every_await(write, check) >= 2


@pytest.fixture
async def folding_store(store_url: str) -> Any:
    """A store that folds its summaries every 3 events, so most appends fold."""
    store: Store = SQLiteStore(store_url, fold_after=3) if store_url.startswith("sqlite") else PostgresStore(store_url, fold_after=3)
    await store.open()
    yield store
    await store.close()


async def test_a_cancelled_append_that_folds_keeps_the_summaries_exact(folding_store: Store) -> None:
    store = folding_store
    streams: list[str] = []  # the stream of each append so far

    def write(n: int) -> Any:
        streams.append("root" if len(streams) % 3 else "sub")
        return store.append(streams[-1], "root", message(f"event {len(streams)}"))

    async def check(n: int, completed: bool) -> None:
        await store.flush()
        # Counts read the summaries up to the mark and the rows after it: a half-done fold
        # would count some events twice or not at all.
        assert await store.count(EventQuery(root_id="root")) == len(streams)
        assert await store.count(EventQuery(root_id="root", kinds=["MessageEvent"])) == len(streams)
        own = EventQuery(root_id="root", conversation_ids=["root"], kinds=["MessageEvent"])
        assert await store.count(own) == streams.count("root")
        await assert_store_works(store)

    # Several rounds, so that the fold lands at every position of the cancellation.
    for _ in range(3):
        assert await cancel_at_every_await(write, check) >= 2


async def test_an_open_cancelled_at_any_await_migrates_whole_or_not_at_all(
    store_url: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    urls: dict[int, str] = {}
    folder = tmp_path_factory.mktemp("opens")

    def fresh(n: int) -> str:
        if store_url.startswith("sqlite"):
            return f"sqlite:///{folder}/{n}/taskwire.db"
        return postgres_schema_url(request)

    opened: list[Store] = []

    async def open_one(n: int) -> None:
        urls[n] = fresh(n)
        store = open_store(urls[n])
        await store.open()
        opened.append(store)

    async def check(n: int, completed: bool) -> None:
        # The database the cancelled open left opens again, migrates if it must, and works.
        again = open_store(urls[n])
        await again.open()
        try:
            await assert_store_works(again)
        finally:
            await again.close()

    try:
        assert await cancel_at_every_await(open_one, check) >= 2
    finally:
        for store in opened:
            await store.close()


async def test_a_cancelled_lease_write_is_whole_and_the_next_works(store_url: str, reopen: OpenStore) -> None:
    if store_url.startswith("sqlite"):
        pytest.skip("SQLite has no leases: one machine owns everything")
    store = await reopen()
    leases = leases_for(store)
    assert leases is not None

    def take(n: int) -> Any:
        return leases.acquire(f"leased-{n}", "replica-a", 30)

    async def check_taken(n: int, completed: bool) -> None:
        holder = await leases.holder(f"leased-{n}")
        assert holder in (None, "replica-a")
        if completed:
            assert holder == "replica-a"
        assert (await leases.acquire(f"leased-{n}", "replica-a", 30))[0] == "replica-a"  # the next works
        await assert_store_works(store)

    last = await cancel_at_every_await(take, check_taken)
    held = [f"leased-{n}" for n in range(1, last + 1)]

    def renew(n: int) -> Any:
        return leases.renew("replica-a", held, 30)

    async def check_renewed(n: int, completed: bool) -> None:
        assert await leases.renew("replica-a", held, 30) == set(held)

    await cancel_at_every_await(renew, check_renewed)

    def release(n: int) -> Any:
        return leases.release(held[n - 1], "replica-a")

    async def check_released(n: int, completed: bool) -> None:
        assert await leases.holder(held[n - 1]) in (None, "replica-a")
        await leases.release(held[n - 1], "replica-a")
        assert await leases.holder(held[n - 1]) is None

    await cancel_at_every_await(release, check_released)
