"""A real server whose database fails (SQLite locked by another process past
``OH_STORE_TIMEOUT``; PostgreSQL backends terminated, the network to it cut): requests answer
503 ``store_unavailable`` (never 500), ``/ready`` answers 503 with the reason, and everything
works again once the cause is gone, runs it cut short included, without a restart."""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from taskwire_client.close_codes import CloseCode
from taskwire.runtime.store_faults import STOPPED_BY_STORE
from tests.api.helpers import all_events, scripted_agent
from tests.api.socket_client import open_socket, read_until_closed
from tests.faults import TcpProxy
from tests.reliability.consistency import assert_consistent
from tests.servers import RunningServer, isolated_settings, taskwire_server, wait_for_status
from tests.services import postgres_schema_url, wait_until
from tests.store.test_faults import _terminate, write_locked

REPO = Path(__file__).resolve().parents[2]
DEMO = str(REPO / "config/demo/two_subagents.yaml")
SLEEPER = json.dumps({"lanes": [{"name": "main", "turns": [
    {"tool_calls": [{"name": "terminal", "arguments": {"command": "sleep 1"}}]},
    {"tool_calls": [{"name": "finish", "arguments": {"message": "slept"}}]}]}]})


def assert_store_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    body = response.json()
    assert body["code"] == "store_unavailable" and body["detail"], body
    assert response.headers.get("retry-after")


async def ready(server: RunningServer) -> bool:
    return (await server.client.get("/ready")).status_code == 200


async def runs_to_the_end(server: RunningServer) -> None:
    created = await server.client.post("/api/conversations", json={"initial_message": "go"})
    assert created.status_code == 201, created.text
    done = await wait_for_status(server.client, created.json()["id"], {"finished", "error"})
    assert done["status"] == "finished"
    await assert_consistent(server, done["id"])


async def test_sqlite_locked_answers_503_then_recovers(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, llm_script=DEMO, store_timeout=0.5)
    async with taskwire_server(settings) as server:
        await runs_to_the_end(server)
        earlier = (await server.client.get("/api/conversations/search")).json()["items"][0]["id"]
        with write_locked(str(tmp_path / "taskwire.db")):
            assert_store_unavailable(await server.client.post("/api/conversations", json={"initial_message": "go"}))
            assert_store_unavailable(await server.client.post(f"/api/conversations/{earlier}/events", json={"content": "hi"}))
            not_ready = await server.client.get("/ready")
            assert not_ready.status_code == 503
            assert "SQLITE_BUSY" in not_ready.json()["checks"]["store"]
            # Reading goes on.
            assert (await server.client.get(f"/api/conversations/{earlier}")).status_code == 200
        await wait_until(lambda: ready(server), timeout=30, what="/ready to answer 200 again")
        await runs_to_the_end(server)


async def test_a_run_cut_short_by_the_store_is_reconciled_and_resumed_once_it_writes_again(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, store_timeout=0.3)
    async with taskwire_server(settings) as server:
        created = await server.client.post("/api/conversations", json={"agent": scripted_agent(SLEEPER), "initial_message": "go"})
        cid = created.json()["id"]

        async def sleeping() -> bool:
            found = await server.client.get(f"/api/conversations/{cid}/events/search", params={"kind": "ActionEvent"})
            return bool(found.json()["items"])

        await wait_until(sleeping, timeout=30, what="the command to start")
        with write_locked(str(tmp_path / "taskwire.db")):
            # The command ends; its observation, usage and status cannot be written.
            await wait_until(lambda: server.runtime.loaded(cid) is None, timeout=30, what="the run to stop on the store")
        # Once the store writes again the conversation is reconciled by itself (its open call
        # closed as failed, its status paused, saying why), then it resumes and finishes.
        done = await wait_for_status(server.client, cid, {"finished", "error"}, timeout=30)
        assert done["status"] == "finished", done
        statuses = [(e["value"], e.get("reason")) for e in await all_events(server, cid)
                    if e["kind"] == "ConversationStateUpdateEvent" and e["key"] == "status"]
        assert any(status == "paused" and (reason or "").startswith(STOPPED_BY_STORE) for status, reason in statuses), statuses
        await assert_consistent(server, cid)


@pytest.fixture
def postgres_url(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    name = f"taskwire-e2e-{uuid.uuid4().hex[:8]}"
    yield f"{postgres_schema_url(request)}&application_name={name}", name


async def test_postgres_connections_lost_answers_503_then_recovers(tmp_path: Path, postgres_url: tuple[str, str]) -> None:
    url, name = postgres_url
    parts = urlsplit(url)
    proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 5432)
    await proxy.start()
    netloc = f"{parts.username}@127.0.0.1:{proxy.port}" if parts.username else f"127.0.0.1:{proxy.port}"
    settings = isolated_settings(tmp_path, llm_script=DEMO, database_url=urlunsplit(parts._replace(netloc=netloc)),
                                 store_timeout=1)
    try:
        async with taskwire_server(settings) as server:
            await runs_to_the_end(server)
            # The server ends this server's backends: the next request works on new ones.
            assert await _terminate(name) >= 1
            await runs_to_the_end(server)
            # The network to PostgreSQL is cut: 503 with the reason, until it is back.
            earlier = (await server.client.get("/api/conversations/search")).json()["items"][0]["id"]
            await server.runtime.unload(earlier)
            await proxy.cut()
            assert_store_unavailable(await server.client.post("/api/conversations", json={"initial_message": "go"}))
            # A socket opened meanwhile is told to come back (1013), not that its query was bad.
            async with open_socket(server, earlier) as ws:
                closed = await read_until_closed(ws)
            assert closed.code == CloseCode.TRY_AGAIN_LATER and closed.reason, closed
            not_ready = await server.client.get("/ready")
            assert not_ready.status_code == 503 and not_ready.json()["checks"]["store"].startswith("down: ")
            await proxy.mend()
            await wait_until(lambda: ready(server), timeout=30, what="/ready to answer 200 again")
            await runs_to_the_end(server)
    finally:
        await proxy.close()


def test_the_lock_helper_really_locks(tmp_path: Path) -> None:
    path = str(tmp_path / "x.db")
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    with write_locked(path):
        other = sqlite3.connect(path, timeout=0.05)
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("INSERT INTO t VALUES (1)")
        other.close()
