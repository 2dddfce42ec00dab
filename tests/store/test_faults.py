"""Real database faults: the store answers ``StoreUnavailable`` (never a driver error), says
why in ``ready()``, loses nothing half way, and writes again by itself once the cause is gone.

SQLite: another connection holds the write lock past the busy timeout; the disk fills up (a
small tmpfs, where the machine lets the test mount one). PostgreSQL: the server terminates the
store's backends (``pg_terminate_backend``, this test's connections only: other tests share the
server); the network to the server is cut (a TCP proxy that drops its connections).
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import uuid
from pathlib import Path
from typing import AsyncIterator, Iterator
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from taskwire.errors import StoreUnavailable
from taskwire.events import MessageEvent
from taskwire.store import ConversationRecord, EventQuery
from taskwire.store.postgres import PostgresStore
from taskwire.store.sqlite import SQLiteStore
from tests.faults import TcpProxy, small_tmpfs
from tests.services import POSTGRES_URL, postgres_schema_url
from tests.store.test_cancellation import assert_store_works


def message(text: str) -> MessageEvent:
    return MessageEvent(role="user", source="user", content=text)


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    store = SQLiteStore(f"sqlite:///{tmp_path}/taskwire.db", timeout=0.3)
    await store.open()
    yield store
    await store.close()


@contextlib.contextmanager
def write_locked(path: str) -> Iterator[None]:
    """Another process's connection holding the database's write lock."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


async def test_sqlite_locked_past_the_timeout_is_unavailable_then_recovers(tmp_path: Path, sqlite_store: SQLiteStore) -> None:
    store = sqlite_store
    await store.create_conversation(ConversationRecord(id="root", root_id="root"))
    kept = await store.append("root", "root", message("before"))
    with write_locked(f"{tmp_path}/taskwire.db"):
        with pytest.raises(StoreUnavailable, match="SQLITE_BUSY"):
            await store.append("root", "root", message("while locked"))
        with pytest.raises(StoreUnavailable, match="SQLITE_BUSY"):
            await store.create_conversation(ConversationRecord(id="other", root_id="other"))
        with pytest.raises(StoreUnavailable):
            await store.update_conversation("root", title="while locked")
        reason = await store.ready()
        assert reason is not None and "SQLITE_BUSY" in reason
        assert store.health.reason is not None
        # Reads go on: WAL readers never wait for the writer.
        assert (await store.get(kept.id)) == kept
    assert await store.ready() is None
    assert store.health.reason is None
    await assert_store_works(store)
    assert [r.id for r in (await store.search(EventQuery(root_id="root"))).items] == [kept.id]
    assert await store.get_conversation("other") is None
    assert (await store.get_conversation("root")).title is None  # type: ignore[union-attr]


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, or a skip where this machine does not let the test mount one."""
    with small_tmpfs(tmp_path / "tiny", "4m") as folder:
        yield folder


async def test_sqlite_on_a_full_disk_is_unavailable_then_recovers(tiny_disk: Path) -> None:
    store = SQLiteStore(f"sqlite:///{tiny_disk}/taskwire.db", timeout=0.3)
    await store.open()
    try:
        await store.create_conversation(ConversationRecord(id="root", root_id="root"))
        kept = await store.append("root", "root", message("before"))
        filler = tiny_disk / "filler"
        with filler.open("wb") as out:  # every free block, then some (the write stops at full)
            with contextlib.suppress(OSError):
                while True:
                    out.write(b"\0" * 65536)
                    out.flush()
        big = "x" * 200_000
        with pytest.raises(StoreUnavailable, match="SQLITE_FULL|SQLITE_IOERR"):
            for n in range(50):  # the WAL's free pages may take a few appends to use up
                await store.append("root", "root", message(f"{n} {big}"))
        # (``ready`` may still pass here: its probe is a tiny write, which the WAL file's
        # room left by the failed transaction can take.)
        assert store.health.reason is not None and "SQLITE_" in store.health.reason
        filler.unlink()
        assert await store.ready() is None
        await assert_store_works(store)
        assert (await store.get(kept.id)) == kept
        seqs = [r.seq for r in (await store.search(EventQuery(root_id="root"))).items]
        assert seqs == sorted(set(seqs))
    finally:
        await store.close()
    shutil.rmtree(tiny_disk, ignore_errors=True)


def _with_app_name(url: str, name: str) -> str:
    return f"{url}&application_name={name}"


async def _terminate(application_name: str) -> int:
    """End every server backend of this test's store (and no other test's)."""
    admin = await asyncpg.connect(POSTGRES_URL)
    try:
        rows = await admin.fetch(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", application_name
        )
    finally:
        await admin.close()
    return len(rows)


async def test_postgres_backends_terminated_the_next_write_works(request: pytest.FixtureRequest) -> None:
    name = f"taskwire-faults-{uuid.uuid4().hex[:8]}"
    store = PostgresStore(_with_app_name(postgres_schema_url(request), name), timeout=2)
    await store.open()
    try:
        await store.create_conversation(ConversationRecord(id="root", root_id="root"))
        await store.append("root", "root", message("before"))
        for _ in range(3):
            assert await _terminate(name) >= 1
            # The pool replaces the dead connections; a write that found one dead before it
            # committed anything is tried again on a fresh one.
            await store.append("root", "root", message("after"))
            await store.update_conversation("root", title="after")
            await assert_store_works(store)
            assert await store.ready() is None
        assert await store.count(EventQuery(root_id="root")) == 4
    finally:
        await store.close()


async def test_postgres_behind_a_cut_network_is_unavailable_then_recovers(request: pytest.FixtureRequest) -> None:
    parts = urlsplit(postgres_schema_url(request))
    proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 5432)
    await proxy.start()
    netloc = f"{parts.username}@127.0.0.1:{proxy.port}" if parts.username else f"127.0.0.1:{proxy.port}"
    store = PostgresStore(urlunsplit(parts._replace(netloc=netloc)), timeout=1)
    await store.open()
    try:
        await store.create_conversation(ConversationRecord(id="root", root_id="root"))
        kept = await store.append("root", "root", message("before"))
        await proxy.cut()
        with pytest.raises(StoreUnavailable):
            await store.append("root", "root", message("while cut"))
        with pytest.raises(StoreUnavailable):
            await store.create_conversation(ConversationRecord(id="other", root_id="other"))
        with pytest.raises(StoreUnavailable):
            await store.get(kept.id)  # reads too: a 503, never a driver error
        assert await store.ready() is not None
        await proxy.mend()
        assert await store.ready() is None
        await assert_store_works(store)
        assert [r.id for r in (await store.search(EventQuery(root_id="root"))).items] == [kept.id]
    finally:
        await store.close()
        await proxy.close()
