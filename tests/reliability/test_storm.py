"""The interrupt storm: conversations interrupted a few milliseconds after they start, by the
hundred, never leave the store unable to write or a conversation half done."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import httpx
import pytest

from tests.reliability.consistency import assert_consistent
from tests.servers import RunningServer, isolated_settings, taskwire_server, wait_for_status
from tests.services import postgres_schema_url

REPO = Path(__file__).resolve().parents[2]
DEMO = str(REPO / "config/demo/two_subagents.yaml")


async def storm(server: RunningServer, *, count: int, at_once: int, seed: int) -> list[str]:
    """Create ``count`` conversations with ``initial_message`` ``at_once`` at a time, interrupting
    each 0-30 ms after its create returns. Returns their ids; fails on any 5xx."""
    delays = random.Random(seed)
    slots = asyncio.Semaphore(at_once)
    failures: list[str] = []

    async def one(delay: float) -> str | None:
        async with slots:
            created = await server.client.post("/api/conversations", json={"initial_message": "go"})
            if created.status_code != 201:
                failures.append(f"create: {created.status_code} {created.text}")
                return None
            cid = created.json()["id"]
            await asyncio.sleep(delay)
            stopped = await server.client.post(f"/api/conversations/{cid}/interrupt")
            if stopped.status_code != 200:
                failures.append(f"interrupt {cid}: {stopped.status_code} {stopped.text}")
            return cid

    ids = await asyncio.gather(*(one(delays.uniform(0, 0.030)) for _ in range(count)))
    assert not failures, f"{len(failures)} of {count} requests failed, first: {failures[:3]}"
    return [cid for cid in ids if cid is not None]


async def check_after_storm(server: RunningServer, ids: list[str]) -> None:
    # The store still writes: a normal conversation runs to its end.
    created = await server.client.post("/api/conversations", json={"initial_message": "go"})
    assert created.status_code == 201, created.text
    done = await wait_for_status(server.client, created.json()["id"], {"finished", "error"})
    assert done["status"] == "finished"
    await assert_consistent(server, done["id"])
    ready = await server.client.get("/ready")
    assert ready.status_code == 200, ready.text
    for cid in ids:
        await wait_for_status(server.client, cid, {"paused", "finished", "error"})
        info = await assert_consistent(server, cid)
        assert info["status"] in ("paused", "finished"), info


async def test_interrupt_storm_on_sqlite_leaves_nothing_half_done(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, llm_script=DEMO)) as server:
        ids = await storm(server, count=200, at_once=5, seed=11)
        await check_after_storm(server, ids)


async def test_interrupt_storm_on_postgres_leaves_nothing_half_done(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    settings = isolated_settings(tmp_path, llm_script=DEMO, database_url=postgres_schema_url(request))
    async with taskwire_server(settings) as server:
        ids = await storm(server, count=60, at_once=5, seed=19)
        await check_after_storm(server, ids)
