"""Ownership between two replicas (two apps in this process, sharing only PostgreSQL and
Redis): where commands run, and that a replica never runs from an out-of-date memory."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.helpers import all_events
from tests.servers import RunningServer, isolated_settings, taskwire_server, wait_for_status
from tests.services import REDIS_URL, need_redis, wait_until

# Each run answers once; the answer names the turn, which is how many answers the model's
# history already holds.
COUNTING = json.dumps({"lanes": [{"name": "main", "turns": [{"text": "one"}, {"text": "two"}, {"text": "three"}]}]})


@pytest.fixture
async def pair(database_url: str, tmp_path: Path) -> AsyncIterator[tuple[RunningServer, RunningServer]]:
    need_redis()
    run = uuid.uuid4().hex[:8]  # replica ids unique on the machine: other runs may share the Redis

    def settings(name: str) -> Any:
        return isolated_settings(tmp_path / name, database_url=database_url, redis_url=REDIS_URL,
                                 replica_id=f"{name}-{run}", llm_script=COUNTING, lease_seconds=3)

    async with taskwire_server(settings("in-process-a")) as a, taskwire_server(settings("in-process-b")) as b:
        yield a, b


async def say(server: RunningServer, conversation_id: str, text: str) -> None:
    response = await server.client.post(f"/api/conversations/{conversation_id}/events", json={"role": "user", "content": text})
    assert response.status_code == 202, response.text
    await wait_for_status(server.client, conversation_id, {"finished", "error"})


async def answers(server: RunningServer, conversation_id: str) -> list[str]:
    events = await all_events(server, conversation_id, kind="MessageEvent")
    return [e["content"] for e in events if e["role"] == "assistant"]


async def test_a_replica_that_runs_a_conversation_again_reloads_what_another_did(pair) -> None:
    a, b = pair
    created = await a.client.post("/api/conversations", json={"initial_message": "first", "run": True})
    conversation_id = created.json()["id"]
    await wait_for_status(a.client, conversation_id, {"finished"})
    # The status is recorded before the run lets go of the conversation: it goes a moment later.
    for _ in range(100):
        if a.runtime.loaded(conversation_id) is None:
            break
        await asyncio.sleep(0.02)
    assert a.runtime.loaded(conversation_id) is None  # not running: owned by nobody, not kept
    await say(b, conversation_id, "second")  # b takes it: nobody holds it
    await say(a, conversation_id, "third")  # a again: it must see b's turn
    assert await answers(a, conversation_id) == ["one", "two", "three"]


async def test_with_sqlite_every_command_runs_here(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, llm_script=COUNTING)
    async with taskwire_server(settings) as server:
        assert not server.runtime.ownership.shared
        created = await server.client.post("/api/conversations", json={"initial_message": "first", "run": True})
        conversation_id = created.json()["id"]
        await wait_for_status(server.client, conversation_id, {"finished"})
        # One machine: no lease to give up; its run over, it holds nothing the store does not.
        await wait_until(lambda: server.runtime.loaded(conversation_id) is None, timeout=30, what="the root unloaded")
        await say(server, conversation_id, "second")
        assert await answers(server, conversation_id) == ["one", "two"]


async def test_a_command_for_a_running_conversation_goes_to_its_owner(pair) -> None:
    a, b = pair
    slow = json.dumps({"lanes": [{"name": "main", "turns": [{"delay": 30, "text": "late"}]}]})
    created = await a.client.post("/api/conversations", json={
        "agent": {"kind": "native", "llm": {"api": "scripted", "script": slow}},
        "initial_message": "take your time", "run": True,
    })
    conversation_id = created.json()["id"]
    assert a.runtime.ownership.holds(conversation_id) and not b.runtime.ownership.holds(conversation_id)
    again = await b.client.post(f"/api/conversations/{conversation_id}/run")
    assert again.status_code == 409, again.text
    stopped = await b.client.post(f"/api/conversations/{conversation_id}/interrupt")
    assert stopped.status_code == 200
    assert (await a.client.get(f"/api/conversations/{conversation_id}")).json()["status"] == "paused"
    assert not a.runtime.ownership.holds(conversation_id)  # given up once the run stopped
    gone = await b.client.delete(f"/api/conversations/{conversation_id}")
    assert gone.status_code == 204
    assert (await a.client.get(f"/api/conversations/{conversation_id}")).status_code == 404
