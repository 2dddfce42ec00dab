"""What only the SQLite backend promises: its file, its schema versions, its query plans."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from pathlib import Path

import aiosqlite
import pytest

from taskwire.events import ActionEvent, MessageEvent
from taskwire.store.base import ConversationRecord, EventQuery
from taskwire.store.schema import SchemaVersionError
from taskwire.store.sqlite import SQLiteStore
from taskwire.store.sqlite_schema import MIGRATIONS, database_path
from taskwire.store.sqlite_text import BEHIND
from taskwire.store.sqlite_writer import FOLD, FOLD_AFTER


@pytest.fixture
async def sqlite_store(tmp_path: Path):
    store = SQLiteStore(f"sqlite:///{tmp_path}/db/taskwire.db")
    await store.open()
    yield store
    await store.close()


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///abs/path.db", "/abs/path.db"),
        ("sqlite:////abs/path.db", "/abs/path.db"),
        ("sqlite:///:memory:", ":memory:"),
        ("sqlite://", ":memory:"),
        ("sqlite:relative/path.db", "relative/path.db"),
        ("sqlite:///abs/path.db?mode=x", "/abs/path.db"),
    ],
)
def test_database_path_reads_the_url(url: str, path: str) -> None:
    assert database_path(url) == path


async def test_the_file_is_created_in_wal_mode(tmp_path: Path, sqlite_store: SQLiteStore) -> None:
    await sqlite_store.append("r", "r", MessageEvent(content="x"))
    assert (tmp_path / "db" / "taskwire.db").exists()
    async with aiosqlite.connect(tmp_path / "db" / "taskwire.db") as conn:
        rows = list(await conn.execute_fetchall("PRAGMA journal_mode"))
        assert rows[0][0] == "wal"
        rows = list(await conn.execute_fetchall("SELECT version FROM schema_version"))
        assert rows == [(len(MIGRATIONS),)]


async def test_a_database_from_a_newer_taskwire_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/taskwire.db"
    store = SQLiteStore(url)
    await store.open()
    await store.close()
    async with aiosqlite.connect(tmp_path / "taskwire.db") as conn:
        await conn.execute("UPDATE schema_version SET version = 99")
        await conn.commit()
    newer = SQLiteStore(url)
    with pytest.raises(SchemaVersionError, match=f"schema version 99.*knows versions up to {len(MIGRATIONS)}"):
        await newer.open()
    await newer.close()


async def test_an_in_memory_store_works_end_to_end() -> None:
    store = SQLiteStore("sqlite:///:memory:")
    await store.open()
    try:
        await store.create_conversation(ConversationRecord(id="r", root_id="r"))
        records = [await store.append("r", "r", MessageEvent(content=str(n))) for n in range(3)]
        assert (await store.search(EventQuery(root_id="r"))).items == records
        assert await store.count(EventQuery(root_id="r")) == 3
        await store.delete_conversation("r")
        assert await store.last_seq("r") == 0
    finally:
        await store.close()


ROOT = "root"
INDEXED_SEARCHES = {
    "tree": EventQuery(root_id=ROOT),
    "tree, deep": EventQuery(root_id=ROOT, after_seq=500),
    "stream": EventQuery(root_id=ROOT, conversation_ids=[ROOT]),
    "stream and kind": EventQuery(root_id=ROOT, conversation_ids=[ROOT], kinds=["ActionEvent"]),
    "kind": EventQuery(root_id=ROOT, kinds=["ActionEvent"]),
    "source": EventQuery(root_id=ROOT, source="user"),
    "parent tool use": EventQuery(root_id=ROOT, parent_tool_use_id="call-1"),
    "subagent": EventQuery(root_id=ROOT, subagent_id="sub-1", until_seq=900),
    "body and time": EventQuery(
        root_id=ROOT, conversation_ids=[ROOT], body="x", timestamp_gte=datetime(2025, 1, 1, tzinfo=timezone.utc)
    ),
}


def _uses_indexes_only(plan: list[str]) -> bool:
    events = [line for line in plan if " events " in f" {line} "]
    return bool(events) and all(line.startswith("SEARCH events USING") for line in events)


@pytest.mark.parametrize("query", INDEXED_SEARCHES.values(), ids=INDEXED_SEARCHES.keys())
@pytest.mark.parametrize("order", ["TIMESTAMP", "TIMESTAMP_DESC"])
async def test_searches_read_an_index_in_seq_order(sqlite_store: SQLiteStore, query: EventQuery, order) -> None:
    await sqlite_store.append(ROOT, ROOT, MessageEvent(content="x"))
    page = await sqlite_store.search(query, limit=1, order=order)
    plan = await sqlite_store.explain_search(query, order=order, page_id=page.next_page_id)
    assert _uses_indexes_only(plan), plan
    assert not any("TEMP B-TREE" in line for line in plan), plan  # no sort: the index gives the order


@pytest.mark.parametrize(
    "query",
    [
        EventQuery(root_id=ROOT, conversation_ids=[ROOT, "sub-1", "sub-2"]),
        EventQuery(root_id=ROOT, kinds=["ActionEvent", "ObservationEvent"], source="agent"),
        EventQuery(root_id=ROOT, conversation_ids=[ROOT, "sub-1"], kinds=["ActionEvent", "MessageEvent"]),
    ],
)
async def test_multi_value_searches_merge_index_reads(sqlite_store: SQLiteStore, query: EventQuery) -> None:
    plan = await sqlite_store.explain_search(query)
    assert _uses_indexes_only(plan), plan
    assert any("MERGE" in line or "UNION ALL" in line for line in plan), plan


@pytest.mark.parametrize(
    "query",
    [
        EventQuery(root_id=ROOT),
        EventQuery(root_id=ROOT, kinds=["ActionEvent"]),
        EventQuery(root_id=ROOT, conversation_ids=[ROOT], kinds=["ActionEvent"]),
        EventQuery(root_id=ROOT, conversation_ids=[ROOT, "sub-1"], kinds=["ActionEvent"], after_seq=5),
        EventQuery(root_id=ROOT, subagent_id="sub-1"),
    ],
)
async def test_counts_read_a_covering_index(sqlite_store: SQLiteStore, query: EventQuery) -> None:
    plan = await sqlite_store.explain_count(query)
    assert any(line.startswith("SEARCH events USING COVERING INDEX") for line in plan), plan
    assert _uses_indexes_only(plan), plan


async def test_counts_stay_exact_past_the_count_mark(sqlite_store: SQLiteStore) -> None:
    # More lone appends than FOLD_AFTER: the counts are folded in along the way.
    for n in range(FOLD_AFTER + 100):
        await sqlite_store.append(("r", "c")[n % 2], "r", MessageEvent(content=str(n)))
    assert await sqlite_store.count(EventQuery(root_id="r")) == FOLD_AFTER + 100
    assert await sqlite_store.count(EventQuery(root_id="r", conversation_ids=["c"])) == (FOLD_AFTER + 100) // 2
    assert await sqlite_store.count(EventQuery(root_id="r", kinds=["MessageEvent"], after_seq=FOLD_AFTER)) == 100


async def test_counts_by_stream_and_kind_read_running_counts(sqlite_store: SQLiteStore) -> None:
    plan = await sqlite_store.explain_count(EventQuery(root_id=ROOT, conversation_ids=[ROOT], kinds=["ActionEvent"]))
    assert any(line.startswith("SEARCH event_counts USING PRIMARY KEY") for line in plan), plan
    assert any("seq>?" in line for line in plan if " events " in f" {line} "), plan


@pytest.fixture
async def small_blocks(tmp_path: Path):
    """A store that summarizes every 5 events, so a small log spans many blocks."""
    store = SQLiteStore(f"sqlite:///{tmp_path}/blocks.db", fold_after=5)
    await store.open()
    yield store
    await store.close()


async def test_time_ranges_are_exact_over_summarized_blocks(small_blocks: SQLiteStore, search_all) -> None:
    t0 = datetime(2025, 1, 1, tzinfo=timezone.utc)

    def event(n: int):
        # Mostly in seq order; every 7th event carries a time 20 s earlier than its place.
        when = t0 + timedelta(seconds=n - 20 if n % 7 == 0 else n)
        if n % 3 == 0:
            return ActionEvent(tool_name="t", tool_call_id=f"c{n}", timestamp=when)
        return MessageEvent(content=str(n), timestamp=when)

    records = []
    for start in range(0, 120, 10):  # batches and lone appends, both past the fold
        if start % 20:
            records += await asyncio.gather(*(small_blocks.append("r", "r", event(n)) for n in range(start, start + 10)))
        else:
            records += [await small_blocks.append("r", "r", event(n)) for n in range(start, start + 10)]

    def at(second: int | None) -> datetime | None:
        return None if second is None else t0 + timedelta(seconds=second)

    for gte, lt in [(None, 30), (30, None), (10, 50), (95, 100), (-30, -10), (200, None), (None, -100), (50, 50), (113, 119)]:
        for kinds in (None, ["ActionEvent"]):
            query = EventQuery(root_id="r", timestamp_gte=at(gte), timestamp_lt=at(lt), kinds=kinds)
            expected = [
                r for r in records
                if (gte is None or r.timestamp >= _z(at(gte)))
                and (lt is None or r.timestamp < _z(at(lt)))
                and (kinds is None or r.kind in kinds)
            ]
            assert await search_all(small_blocks, query, limit=3) == expected, (gte, lt, kinds)
            assert await search_all(small_blocks, query, limit=4, order="TIMESTAMP_DESC") == expected[::-1]
            assert await small_blocks.count(query) == len(expected)
    assert await small_blocks.count(EventQuery(root_id="r", kinds=["ActionEvent"])) == 40


async def test_a_late_time_range_reads_a_seq_range(small_blocks: SQLiteStore) -> None:
    t0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
    for n in range(50):
        await small_blocks.append("r", "r", MessageEvent(content=str(n), timestamp=t0 + timedelta(seconds=n)))
    plan = await small_blocks.explain_search(EventQuery(root_id="r", timestamp_gte=t0 + timedelta(seconds=40)))
    assert any("seq>? AND seq<?" in line for line in plan), plan


def _z(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def test_folding_reads_only_the_events_past_the_mark(tmp_path: Path, sqlite_store: SQLiteStore) -> None:
    async with aiosqlite.connect(tmp_path / "db" / "taskwire.db") as conn:
        for statement in FOLD:
            # Named, not numbered (?1): Python 3.12.1's sqlite3 warns about numbered ones given a tuple.
            statement = statement.format(tree=":tree", after=":after", until=":until")
            values = {"tree": 1, "after": 0, "until": 10}
            plan = [row[3] for row in await conn.execute_fetchall("EXPLAIN QUERY PLAN " + statement, values)]
            assert any("events_by_seq (tree=? AND seq>? AND seq<?)" in line for line in plan), plan


async def test_the_wal_is_checkpointed_in_the_background(tmp_path: Path) -> None:
    # Not by SQLite inside a commit (wal_autocheckpoint is off on the writer): the events
    # reach the database file while the store stays open and idle.
    store = SQLiteStore(f"sqlite:///{tmp_path}/checkpointed.db")
    await store.open()
    try:
        db = tmp_path / "checkpointed.db"
        before = db.stat().st_size
        await asyncio.gather(*(store.append("r", "r", MessageEvent(content="x" * 500)) for _ in range(3000)))
        for _ in range(100):
            if db.stat().st_size > before + 1_000_000:
                break
            await asyncio.sleep(0.05)
        assert db.stat().st_size > before + 1_000_000
        assert await store.count(EventQuery(root_id="r")) == 3000
    finally:
        await store.close()


async def test_the_text_index_catches_up_by_itself_once_appends_pause(tmp_path: Path) -> None:
    # While appends keep coming it waits for a backlog worth a turn of the write lock; once
    # they pause it indexes what is behind, and a search finds the same either way.
    store = SQLiteStore(f"sqlite:///{tmp_path}/indexed.db")
    await store.open()
    try:
        for n in range(40):
            await store.append("r", "r", MessageEvent(content=f"needle {n} in the hay"))
        query = EventQuery(root_id="r", body="needle")
        assert len((await store.search(query)).items) == 40
        db = tmp_path / "indexed.db"
        for _ in range(100):
            async with aiosqlite.connect(db) as conn:
                behind = len(list(await conn.execute_fetchall(BEHIND)))
            if not behind:
                break
            await asyncio.sleep(0.05)
        assert not behind
        assert len((await store.search(query)).items) == 40
    finally:
        await store.close()
