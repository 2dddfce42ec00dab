"""A database written before the body text was kept: opening it fills the text in, in
batches, and ``body=`` then finds what it means in the old events as in new ones."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from taskwire.events import MessageEvent, ObservationEvent
from taskwire.events.body_text import fold, stored_body_text
from taskwire.store import open_store
from taskwire.store.base import EventQuery
from taskwire.store.postgres_schema import MIGRATIONS as POSTGRES_MIGRATIONS
from taskwire.store.rows import event_record
from taskwire.store.sqlite_schema import MIGRATIONS as SQLITE_MIGRATIONS, statements
from taskwire.store.text_fill import FILL_BATCH
from tests.services import postgres_schema_url

ROOT = "old-root"
COUNT = 2 * FILL_BATCH + 123  # three batches


def old_rows() -> list[tuple[Any, ...]]:
    """The rows a version-1 store held: no ``body``."""
    rows = []
    for n in range(COUNT):
        if n % 1000 == 7:
            event: Any = MessageEvent(content=f'The "Rare" Word École {n}')
        else:
            event = ObservationEvent(tool_name="terminal", tool_call_id=f"c{n}", content=f"line {n} of output")
        event.seq = n + 1
        r = event_record(ROOT, ROOT, event)
        rows.append((1, r.seq, r.id, r.conversation_id, r.kind, r.source, r.timestamp, r.subagent_id, r.parent_tool_use_id, r.json))
    return rows


def write_sqlite_v1(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in statements(SQLITE_MIGRATIONS[0]):
        conn.execute(statement)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version VALUES (1)")
    conn.execute("BEGIN")
    conn.execute("INSERT INTO trees (root_id) VALUES (?)", (ROOT,))
    conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", old_rows())
    conn.execute("COMMIT")
    conn.close()


async def write_postgres_v1(url: str) -> None:
    conn = await asyncpg.connect(url.split("?")[0], server_settings={"search_path": url.split("search_path=")[1]})
    try:
        await conn.execute(POSTGRES_MIGRATIONS[0])
        await conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (1)")
        await conn.execute("INSERT INTO trees (root_id, last_seq) VALUES ($1, $2)", ROOT, COUNT)
        await conn.copy_records_to_table("events", records=old_rows(), columns=[
            "tree", "seq", "id", "conversation_id", "kind", "source", "timestamp", "subagent_id", "parent_tool_use_id", "json"
        ])  # fmt: skip
    finally:
        await conn.close()


@pytest.fixture(params=["sqlite", "postgres"])
async def old_database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        write_sqlite_v1(tmp_path / "old.db")
        return f"sqlite:///{tmp_path}/old.db"
    url = postgres_schema_url(request)
    await write_postgres_v1(url)
    return url


async def test_opening_an_old_database_fills_in_the_text_of_its_events(old_database: str, caplog) -> None:
    caplog.set_level("WARNING")
    store = open_store(old_database)
    await store.open()
    try:
        assert any("filling in the search text of" in r.getMessage() for r in caplog.records)
        rare = [n for n in range(COUNT) if n % 1000 == 7]
        page = await store.search(EventQuery(root_id=ROOT, body='"rare" WORD école'))
        assert [record.seq for record in page.items] == [n + 1 for n in rare]
        assert all(fold('"rare" WORD école') in stored_body_text(r.json) for r in page.items)
        assert await store.count(EventQuery(root_id=ROOT, body="of output")) == COUNT - len(rare)
        assert await store.count(EventQuery(root_id=ROOT, body="content")) == 0  # a field name
        # New events are searched the same way, beside the old ones.
        await store.append(ROOT, ROOT, MessageEvent(content='new: "RARE" word'))
        assert await store.count(EventQuery(root_id=ROOT, body='"RARE" WORD')) == len(rare) + 1
    finally:
        await store.close()
    caplog.clear()
    again = open_store(old_database)
    await again.open()  # filled once: nothing left to do
    try:
        assert not any("filling in" in r.getMessage() for r in caplog.records)
        assert await again.count(EventQuery(root_id=ROOT, body='"rare" word')) == len(rare) + 1
    finally:
        await again.close()
