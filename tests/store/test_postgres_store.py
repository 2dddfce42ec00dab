"""What only the PostgreSQL backend promises: several writers on one tree, its schema
versions, and query plans that read a page, not the log."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone

import asyncpg
import pytest

from taskwire.events import ActionEvent, MessageEvent
from taskwire.store import open_store
from taskwire.store.base import EventQuery
from taskwire.store.postgres import PostgresStore
from taskwire.store.postgres_schema import MIGRATIONS
from taskwire.store.schema import SchemaVersionError
from tests.services import POSTGRES_URL, postgres_schema_url


@pytest.fixture
def url(request: pytest.FixtureRequest) -> str:
    return postgres_schema_url(request)


@pytest.fixture
async def stores(url: str) -> AsyncIterator[list[PostgresStore]]:
    """Three stores over one database: three replicas' worth of writers."""
    opened = [PostgresStore(url) for _ in range(3)]
    for store in opened:
        await store.open()
    yield opened
    for store in opened:
        await store.close()


async def test_several_writers_on_one_tree_get_unique_strictly_increasing_seqs(stores) -> None:
    async def write(store: PostgresStore, writer: int) -> list[int]:
        seqs = []
        for turn in range(20):
            batch = [store.append("root", "root", MessageEvent(content=f"{writer}-{turn}-{n}")) for n in range(10)]
            seqs += [record.seq for record in await asyncio.gather(*batch)]
        return seqs

    per_writer = await asyncio.gather(*(write(store, n) for n, store in enumerate(stores)))
    for seqs in per_writer:
        assert seqs == sorted(seqs)  # each writer's appends, in its call order
    every = sorted(seq for seqs in per_writer for seq in seqs)
    assert every == list(range(1, 601))
    assert await stores[0].last_seq("root") == 600


async def test_a_reader_never_sees_a_later_seq_before_an_earlier_one(stores) -> None:
    # Commits of one tree queue on its counter row, so what is visible is always 1..n.
    writers = [
        asyncio.gather(*(store.append("root", "root", MessageEvent(content=str(n))) for n in range(150)))
        for store in stores[:2]
    ]
    reader, done = stores[2], asyncio.gather(*writers)
    while not done.done():
        page = await reader.search(EventQuery(root_id="root"), limit=1, order="TIMESTAMP_DESC")
        if page.items:
            top = page.items[0].seq
            assert await reader.count(EventQuery(root_id="root", until_seq=top)) == top
        await asyncio.sleep(0)
    await done
    assert await reader.count(EventQuery(root_id="root")) == 300


async def test_replicas_starting_together_migrate_once(url: str) -> None:
    together = [open_store(url) for _ in range(4)]
    try:
        await asyncio.gather(*(store.open() for store in together))
        record = await together[0].append("r", "r", MessageEvent(content="x"))
        assert await together[3].get(record.id) == record
    finally:
        for store in together:
            await store.close()


async def test_a_database_from_a_newer_taskwire_is_refused(url: str) -> None:
    store = PostgresStore(url)
    await store.open()
    await store.pool.execute("UPDATE schema_version SET version = 99")
    await store.close()
    newer = PostgresStore(url)
    with pytest.raises(SchemaVersionError, match=f"schema version 99.*knows versions up to {len(MIGRATIONS)}"):
        await newer.open()
    await newer.close()


async def test_a_missing_schema_is_named_in_the_error() -> None:
    store = PostgresStore(f"{POSTGRES_URL}?search_path=taskwire_no_such_schema")
    with pytest.raises(RuntimeError, match="no schema on its search_path"):
        await store.open()
    await store.close()


ROOT = "root"
PAGED_SEARCHES = {
    "tree": EventQuery(root_id=ROOT),
    "tree, deep": EventQuery(root_id=ROOT, after_seq=7_500),
    "stream": EventQuery(root_id=ROOT, conversation_ids=["sub-1"]),
    "stream and kind": EventQuery(root_id=ROOT, conversation_ids=[ROOT], kinds=["ActionEvent"]),
    "kind": EventQuery(root_id=ROOT, kinds=["ActionEvent"]),
    "parent tool use": EventQuery(root_id=ROOT, parent_tool_use_id="call-1"),
}
MERGED_SEARCHES = {
    "two streams": EventQuery(root_id=ROOT, conversation_ids=[ROOT, "sub-1"]),
    "two kinds": EventQuery(root_id=ROOT, kinds=["ActionEvent", "MessageEvent"]),
}


@pytest.fixture
async def big_tree(url: str) -> AsyncIterator[PostgresStore]:
    """10,000 events in one tree (a root and one sub-agent), the table analyzed."""
    store = PostgresStore(url)
    await store.open()
    for chunk in range(10):
        events = []
        for n in range(1000):
            if n % 4 == 0:
                event = ActionEvent(tool_name="terminal", tool_call_id=f"c{chunk}-{n}")
            else:
                event = MessageEvent(content=f"m{n}")
            if n % 2:
                event.subagent_id, event.parent_tool_use_id = "sub-1", "call-1"
            events.append(("sub-1" if n % 2 else ROOT, event))
        await asyncio.gather(*(store.append(c, ROOT, e) for c, e in events))
    await store.pool.execute("ANALYZE events")
    yield store
    await store.close()


async def test_pages_read_an_index_in_seq_order_and_merge_multi_value_filters(big_tree: PostgresStore) -> None:
    for name, query in PAGED_SEARCHES.items():
        for order in ("TIMESTAMP", "TIMESTAMP_DESC"):
            first = await big_tree.search(query, limit=100, order=order)
            plan = "\n".join(await big_tree.explain_search(query, order=order, page_id=first.next_page_id))
            assert "Index" in plan and "Seq Scan" not in plan, (name, order, plan)
            assert "Sort" not in plan, (name, order, plan)  # the index gives the order
    for name, query in MERGED_SEARCHES.items():
        lines = await big_tree.explain_search(query)
        assert "Seq Scan" not in "\n".join(lines), (name, lines)
        # One limited index read per value: what is merged is their pages, never the matches.
        scans = [line for line in lines if "Index" in line and " on events" in line]
        limits = [line for line in lines if "Limit" in line]
        assert len(scans) == 2 and len(limits) == 3, (name, lines)


async def test_a_seq_clash_is_not_reported_as_a_duplicate_id(url: str) -> None:
    store = PostgresStore(url)
    await store.open()
    try:
        record = await store.append("r", "r", MessageEvent(content="x"))
        await store.pool.execute("UPDATE trees SET last_seq = 0")  # as if the counter went back
        with pytest.raises(asyncpg.UniqueViolationError):
            await store.append("r", "r", MessageEvent(content="y"))
        assert await store.get(record.id) == record
    finally:
        await store.close()


async def test_summaries_stay_exact_with_several_writers_folding(url: str, search_all) -> None:
    # Every fifth event folds; three writers interleave on one tree.
    t0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
    writers = [PostgresStore(url, fold_after=5) for _ in range(3)]
    for store in writers:
        await store.open()
    try:
        def event(n: int) -> MessageEvent | ActionEvent:
            # Mostly in time order; every seventh a minute early.
            when = t0 + timedelta(seconds=n - 60 if n % 7 == 0 else n)
            if n % 3 == 0:
                return ActionEvent(tool_name="t", tool_call_id=f"c{n}", timestamp=when)
            return MessageEvent(content=str(n), timestamp=when)

        plan = [(("root", "sub")[n % 2], event(n)) for n in range(300)]
        records = []
        for start in range(0, 300, 30):
            chunk = plan[start:start + 30]
            records += await asyncio.gather(*(writers[n % 3].append(c, "root", e) for n, (c, e) in enumerate(chunk)))
        reader = writers[0]
        assert await reader.count(EventQuery(root_id="root")) == 300
        assert await reader.count(EventQuery(root_id="root", conversation_ids=["sub"], kinds=["ActionEvent"])) == 50
        for lower, upper in ((30, 90), (100, 101), (250, 400), (-100, 5)):
            query = EventQuery(root_id="root", timestamp_gte=t0 + timedelta(seconds=lower),
                               timestamp_lt=t0 + timedelta(seconds=upper))
            expected = sorted((r for r in records if query.timestamp_gte <= _at(r) < query.timestamp_lt), key=lambda r: r.seq)
            assert await search_all(reader, query) == expected
            assert await reader.count(query) == len(expected)
        # Counts by stream and kind read only the events past the mark, from an index.
        plan_lines = "\n".join(await reader.explain_count(EventQuery(root_id="root", kinds=["ActionEvent"])))
        assert "Index" in plan_lines and "Seq Scan on events" not in plan_lines, plan_lines
    finally:
        for store in writers:
            await store.close()


def _at(record) -> datetime:
    return datetime.fromisoformat(record.timestamp.replace("Z", "+00:00"))
