"""PostgreSQL restarts under a running conversation (a private cluster, really stopped and
started: the shared one is never touched): the run the store stopped says so (``paused`` with
its ``status_reason``) as soon as the store writes again, then carries on by itself and
finishes; nothing is lost, nothing runs twice, the log says it in a few lines."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any, AsyncIterator

import pytest

from taskwire.runtime.store_faults import STOPPED_BY_STORE
from tests.api.helpers import all_events, scripted_agent
from tests.private_postgres import PrivatePostgres
from tests.reliability.conftest import log_problems
from tests.reliability.consistency import assert_consistent
from tests.scaleout.conftest import start_cluster, stop_cluster
from tests.servers import RunningServer, isolated_settings, taskwire_server, wait_for_status
from tests.services import REDIS_URL, need_redis, wait_until


TURNS = 24


def ticking_script(turns: int = TURNS) -> str:
    """An agent that makes a short tool call, ``turns`` times, then finishes."""
    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "terminal", "arguments": {"command": f"sleep 0.15; echo tick {n}"}}]}
        for n in range(turns)
    ]
    steps.append({"tool_calls": [{"name": "finish", "arguments": {"message": "ticked"}}]})
    return json.dumps({"lanes": [{"name": "main", "turns": steps}]})


@pytest.fixture
async def cluster() -> AsyncIterator[PrivatePostgres]:
    pg = PrivatePostgres()
    await asyncio.to_thread(pg.init)
    await asyncio.to_thread(pg.start)
    try:
        yield pg
    finally:
        await asyncio.to_thread(pg.close)


async def ticks(server: RunningServer, cid: str) -> int:
    found = await server.client.get(f"/api/conversations/{cid}/events/search", params={"kind": "ObservationEvent"})
    return len(found.json()["items"])


async def restart_mid_run(server: RunningServer, pg: PrivatePostgres, cid: str, down: float = 1.0) -> None:
    """Wait for the run to be well under way, then stop the database for ``down`` s and start it."""
    await wait_until(lambda: _ticked(server, cid, 3), timeout=60, what="the run to make three tool calls")
    await bounce(pg, down)


async def bounce(pg: PrivatePostgres, down: float = 1.0) -> None:
    """Stop the database for ``down`` s (a run keeps writing meanwhile: it hits the fault), then start it."""
    await asyncio.to_thread(pg.stop)
    await asyncio.sleep(down)
    await asyncio.to_thread(pg.start)


async def start(server: RunningServer, script: str, **agent: Any) -> str:
    """A conversation running ``script``; returns its id."""
    body = {"agent": scripted_agent(script, **agent), "initial_message": "go"}
    created = await server.client.post("/api/conversations", json=body)
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


async def _ticked(server: RunningServer, cid: str, n: int) -> bool:
    return await ticks(server, cid) >= n


def status_events(events: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(e["value"], e.get("reason")) for e in events
            if e["kind"] == "ConversationStateUpdateEvent" and e["key"] == "status" and not e.get("subagent_id")]


async def assert_paused_then_finished(server: RunningServer, cid: str) -> list[dict[str, Any]]:
    """The run was ``paused`` saying the store stopped it, then finished; ``seq`` 1..N without a
    gap; the tree consistent. Returns its events."""
    events = await all_events(server, cid, include_subagents="true")
    statuses = status_events(events)
    assert statuses[-1] == ("finished", None), statuses
    assert any(s == "paused" and (r or "").startswith(STOPPED_BY_STORE) for s, r in statuses), statuses
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    await assert_consistent(server, cid)
    return events


def assert_quiet(records: list[logging.LogRecord]) -> None:
    """An expected fault is told in lines, never with a traceback or an error."""
    loud = [r for r in records if r.exc_info or r.levelno >= logging.ERROR]
    assert not loud, [f"{r.name}: {r.getMessage()}" for r in loud]


async def test_a_run_the_database_restart_stopped_says_so_then_resumes_by_itself(
    tmp_path: Path, cluster: PrivatePostgres, caplog: pytest.LogCaptureFixture
) -> None:
    settings = isolated_settings(tmp_path, database_url=cluster.url, store_timeout=1, forward_subagent_events=True)
    async with taskwire_server(settings) as server:
        cid = await start(server, ticking_script())
        await restart_mid_run(server, cluster, cid)
        done = await wait_for_status(server.client, cid, {"finished", "error"}, timeout=120)
        assert done["status"] == "finished" and done["status_reason"] is None, done
        events = await all_events(server, cid, include_subagents="true")
        statuses = status_events(events)
        stopped = [reason for status, reason in statuses if status == "paused"]
        assert stopped and stopped[0].startswith(STOPPED_BY_STORE), statuses
        assert statuses[-2:] == [("running", None), ("finished", None)], statuses
        # Every step ran once: each tick's output is observed exactly once (or closed as failed
        # once, when the fault hit it), and the run went through every turn.
        outputs = [e["content"] for e in events if e["kind"] == "ObservationEvent"]
        for n in range(TURNS):
            assert sum(f"tick {n}\n" in str(text) for text in outputs) <= 1, outputs
        assert len([e for e in events if e["kind"] == "ActionEvent"]) >= TURNS
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        await assert_consistent(server, cid)
        assert (await server.client.get("/ready")).status_code == 200
    assert_quiet(caplog.records)


async def test_with_resuming_off_the_run_stays_paused_saying_why(tmp_path: Path, cluster: PrivatePostgres) -> None:
    settings = isolated_settings(tmp_path, database_url=cluster.url, store_timeout=1, resume_after_store_fault=False)
    async with taskwire_server(settings) as server:
        cid = await start(server, ticking_script())
        await restart_mid_run(server, cluster, cid)
        paused = await wait_for_status(server.client, cid, {"paused", "finished", "error"}, timeout=60)
        assert paused["status"] == "paused" and paused["status_reason"].startswith(STOPPED_BY_STORE), paused
        await assert_consistent(server, cid)
        # A person runs it: it carries on from where it stopped.
        assert (await server.client.post(f"/api/conversations/{cid}/run")).status_code < 300
        done = await wait_for_status(server.client, cid, {"finished", "error"}, timeout=120)
        assert done["status"] == "finished" and done["status_reason"] is None, done
        await assert_consistent(server, cid)


SUBAGENT_PROMPT = "Tick with the terminal tool until done."


def subagent_script() -> str:
    """The root starts one sub-agent that ticks (the database restarts under it), then finishes."""
    child = json.loads(ticking_script())["lanes"][0]
    child.update(name="child", match={"first_user_ends_with": SUBAGENT_PROMPT})
    main = {"name": "main", "turns": [
        {"tool_calls": [{"name": "task", "arguments": {"description": "Tick", "prompt": SUBAGENT_PROMPT}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"message": "the sub-agent is done"}}]},
    ]}
    return json.dumps({"lanes": [child, main]})


async def test_a_subagent_running_at_the_restart_is_closed_honestly_and_the_root_carries_on(
    tmp_path: Path, cluster: PrivatePostgres, caplog: pytest.LogCaptureFixture
) -> None:
    settings = isolated_settings(tmp_path, database_url=cluster.url, store_timeout=1, forward_subagent_events=True)
    async with taskwire_server(settings) as server:
        cid = await start(server, subagent_script())

        async def child_ticked() -> bool:
            found = await server.client.get(f"/api/conversations/{cid}/events/search",
                                            params={"kind": "ObservationEvent", "include_subagents": "true"})
            return len([e for e in found.json()["items"] if e.get("subagent_id")]) >= 3

        await wait_until(child_ticked, timeout=60, what="the sub-agent to make three tool calls")
        await bounce(cluster)
        done = await wait_for_status(server.client, cid, {"finished", "error"}, timeout=120)
        assert done["status"] == "finished", done
        events = await all_events(server, cid, include_subagents="true")
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        finished = [e for e in events if e["kind"] == "SubagentFinishedEvent"]
        assert len(finished) == 1, finished  # told once, whichever way it ended
        await assert_consistent(server, cid)
    assert_quiet(caplog.records)


async def test_a_permission_request_waiting_at_the_restart_is_answered_after_it(
    tmp_path: Path, cluster: PrivatePostgres, caplog: pytest.LogCaptureFixture
) -> None:
    settings = isolated_settings(tmp_path, database_url=cluster.url, store_timeout=1)
    async with taskwire_server(settings) as server:
        cid = await start(server, ticking_script(2), approval="always")
        waiting: list[dict[str, Any]] = []

        async def asked() -> bool:
            waiting[:] = (await server.client.get(f"/api/conversations/{cid}/permissions")).json()
            return bool(waiting)

        await wait_until(asked, timeout=60, what="a permission request")

        async def announced() -> bool:  # the run writes nothing more while it waits: bounce then
            found = await server.client.get(f"/api/conversations/{cid}/events/search",
                                            params={"kind": "ConversationStateUpdateEvent", "sort_order": "TIMESTAMP_DESC"})
            states = [e["value"] for e in found.json()["items"] if e["key"] == "pending_permissions"]
            return bool(states) and [p["request_id"] for p in states[0]] == [w["request_id"] for w in waiting]

        # The request is listed once announced, a moment before the tree's pending set is stored.
        await wait_until(announced, timeout=60, what="the pending set to be stored")
        await bounce(cluster)
        await wait_until(lambda: _ready(server), timeout=30, what="/ready to answer 200 again")
        # The request still waits, and the person's answer goes through; so does the next one.
        for _ in range(2):
            await wait_until(asked, timeout=60, what="a permission request")
            answered = await server.client.post(f"/api/conversations/{cid}/permissions/{waiting[0]['request_id']}",
                                                json={"decision": "allow"})
            assert answered.status_code == 200, answered.text
        done = await wait_for_status(server.client, cid, {"finished", "error"}, timeout=120)
        assert done["status"] == "finished", done
        await assert_consistent(server, cid)
    assert_quiet(caplog.records)


async def _ready(server: RunningServer) -> bool:
    return (await server.client.get("/ready")).status_code == 200


async def test_with_two_replicas_a_run_fenced_by_its_lease_resumes_and_both_logs_stay_quiet(tmp_path: Path, cluster: PrivatePostgres) -> None:
    need_redis()
    replicas = await start_cluster(tmp_path, cluster.url, REDIS_URL)
    try:
        a, b = replicas.a, replicas.b
        cid = await start(a, ticking_script())  # type: ignore[arg-type]
        # Down longer than 0.8 of the replicas' 3 s lease: the owner stops the run itself before
        # its lease may lapse (the store's doing, so it resumes all the same).
        await restart_mid_run(b, cluster, cid, down=4.0)  # type: ignore[arg-type]

        async def finished() -> bool:
            response = await b.client.get(f"/api/conversations/{cid}")
            return response.status_code == 200 and response.json()["status"] in ("finished", "error")

        await wait_until(finished, timeout=120, what="the run to finish")
        await assert_paused_then_finished(b, cid)  # type: ignore[arg-type]
        for replica in (a, b):
            assert not log_problems(replica), log_problems(replica)
    finally:
        await stop_cluster(replicas)


async def test_with_two_replicas_a_permission_wait_outlasting_the_lease_is_closed_then_the_run_goes_on(
    tmp_path: Path, cluster: PrivatePostgres
) -> None:
    need_redis()
    replicas = await start_cluster(tmp_path, cluster.url, REDIS_URL)
    try:
        a, b = replicas.a, replicas.b
        cid = await start(a, ticking_script(2), approval="always")  # type: ignore[arg-type]

        async def pending() -> list[dict[str, Any]]:
            return list((await b.client.get(f"/api/conversations/{cid}/permissions")).json())

        async def asked() -> bool:
            return bool(await pending())

        await wait_until(asked, timeout=60, what="a permission request")
        first = (await pending())[0]["request_id"]
        # Down longer than 0.8 of the 3 s lease: the owner, unable to renew, stops the run
        # itself (nothing of it was writing); once the store is back it is resumed, the request
        # it waited on closed as cancelled, and the model asks again.
        await bounce(cluster, 4.0)

        async def asked_again() -> bool:
            return any(r["request_id"] != first for r in await pending())

        await wait_until(asked_again, timeout=60, what="a new permission request (the next tick's)")
        request = next(r for r in await pending() if r["request_id"] != first)
        answered = await b.client.post(f"/api/conversations/{cid}/permissions/{request['request_id']}",
                                       json={"decision": "allow"})
        assert answered.status_code == 200, answered.text

        async def finished() -> bool:
            return (await b.client.get(f"/api/conversations/{cid}")).json()["status"] in ("finished", "error")

        await wait_until(finished, timeout=120, what="the run to finish")
        events = await assert_paused_then_finished(b, cid)  # type: ignore[arg-type]
        cancelled = [e for e in events if e["kind"] == "PermissionResolvedEvent" and e["outcome"] == "cancelled"]
        assert len(cancelled) == 1 and "store" in cancelled[0]["reason"], cancelled
        for replica in (a, b):
            assert not log_problems(replica), log_problems(replica)
    finally:
        await stop_cluster(replicas)
