"""A store that failed finds out by itself that it writes again: its probe, with no traffic,
tells its listeners (the runtime resumes what it stopped) and stops once it has."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from taskwire.errors import StoreUnavailable
from taskwire.store import ConversationRecord
from taskwire.store.sqlite import SQLiteStore
from tests.services import wait_until
from tests.store.test_faults import write_locked


async def test_a_failed_store_notices_by_itself_that_it_writes_again(tmp_path: Path) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path}/taskwire.db", timeout=0.2)
    await store.open()
    recovered: list[str] = []
    store.health.on_recovered(lambda: recovered.append("again"))
    try:
        with write_locked(f"{tmp_path}/taskwire.db"):
            with pytest.raises(StoreUnavailable, match="SQLITE_BUSY"):
                await store.create_conversation(ConversationRecord(id="root", root_id="root"))
            failures = store.health.failures
            # The probe keeps trying while the lock is held, each try a failure it counts.
            await wait_until(lambda: store.health.failures > failures, timeout=30, what="the probe to try")
            assert store.health.reason is not None and not recovered
        # Nobody writes: the probe alone finds the store healthy again, and tells, once.
        await wait_until(lambda: store.health.reason is None, timeout=30, what="the store to know it writes again")
        assert recovered == ["again"]
        failures = store.health.failures
        await asyncio.sleep(0.6)  # the probe has stopped: nothing more is tried or counted
        assert store.health.failures == failures and recovered == ["again"]
    finally:
        await store.close()


async def test_closing_a_failed_store_stops_its_probe(tmp_path: Path) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path}/taskwire.db", timeout=0.2)
    await store.open()
    with write_locked(f"{tmp_path}/taskwire.db"):
        with pytest.raises(StoreUnavailable):
            await store.create_conversation(ConversationRecord(id="root", root_id="root"))
        await store.close()
    probes = [t for t in asyncio.all_tasks() if t.get_name().startswith("probe the store")]
    assert not probes, probes
