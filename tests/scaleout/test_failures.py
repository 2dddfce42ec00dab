"""Failures across replicas: Redis restarting mid-run, the owning replica killed mid-run."""

from __future__ import annotations

from typing import Any

from tests.api.helpers import all_events
from tests.scaleout.conftest import WAIT, Cluster, Replica, SocketClient, is_finished, watched_run
from tests.scaleout.test_two_replicas import NOTE
from tests.services import wait_until


async def stored_count(replica: Replica, conversation_id: str) -> int:
    response = await replica.client.get(f"/api/conversations/{conversation_id}/events/count",
                                        params={"include_subagents": "true"})
    return response.json()


async def bus_is(replica: Replica, state: str) -> bool:
    status, body = await replica.ready()
    return body["checks"]["bus"] == state and (status == 200) == (state == "ok")


def assert_every_stored_event_once_in_order(client: SocketClient, stored: list[dict[str, Any]]) -> None:
    ids = [e["id"] for e in client.events]
    assert len(ids) == len(set(ids)), "a duplicate reached the client"
    assert [e["seq"] for e in client.events] == [e["seq"] for e in stored]
    assert client.events == stored


async def test_a_client_gets_every_event_once_across_a_redis_restart(cluster_with_own_redis) -> None:
    cluster, redis = cluster_with_own_redis
    a, b = cluster.a, cluster.b
    async with watched_run(cluster) as (conversation_id, client):
        await redis.stop()
        # Both replicas stay up and say the bus is down.
        for replica in (a, b):
            await wait_until(lambda: bus_is(replica, "down"), timeout=WAIT, what=f"{replica.name} to report the bus down")
        # The run goes on: its events are stored, but cannot cross to B live.
        during = await stored_count(a, conversation_id)
        await wait_until(lambda: _grew(a, conversation_id, during + 2), timeout=WAIT, what="events stored while Redis is down")
        await redis.start()
        for replica in (a, b):
            await wait_until(lambda: bus_is(replica, "ok"), timeout=WAIT, what=f"{replica.name} to reconnect")
        await client.wait_for(is_finished, "the run's end, seen on replica B")
    assert_every_stored_event_once_in_order(client, await all_events(b, conversation_id, include_subagents="true"))


async def _grew(replica: Replica, conversation_id: str, target: int) -> bool:
    return await stored_count(replica, conversation_id) >= target


async def test_a_run_that_ends_while_redis_is_down_still_reaches_the_client(cluster_with_own_redis) -> None:
    cluster, redis = cluster_with_own_redis
    a, b = cluster.a, cluster.b
    async with watched_run(cluster) as (conversation_id, client):
        await redis.stop()
        await wait_until(lambda: _status_is(a, conversation_id, "finished"), timeout=WAIT, what="the run to end")
        assert not client.saw(is_finished)  # nothing could bring it over
        await redis.start()
        await client.wait_for(is_finished, "the run's end, once Redis is back")
    assert_every_stored_event_once_in_order(client, await all_events(b, conversation_id, include_subagents="true"))


async def _status_is(replica: Replica, conversation_id: str, status: str) -> bool:
    return (await replica.client.get(f"/api/conversations/{conversation_id}")).json()["status"] == status


async def test_killing_the_owner_loses_nothing_acknowledged_and_b_takes_over(cluster: Cluster) -> None:
    a, b = cluster.a, cluster.b
    async with watched_run(cluster) as (conversation_id, client):
        await client.wait_for(lambda e: e["kind"] == "ObservationEvent" and "subagent_id" in e,
                              "a sub-agent's first result on B")
        sent = await b.client.post(f"/api/conversations/{conversation_id}/events",
                                   json={"role": "user", "content": NOTE, "run": False})
        assert sent.status_code == 202, sent.text  # acknowledged: stored by A before the answer
        await a.kill()
        seen_before = list(client.events)
        # Until A's lease lapses, B cannot reach the owner, and says so; then it takes over.
        first = await b.client.post(f"/api/conversations/{conversation_id}/run")
        if first.status_code != 200:
            assert first.status_code == 503 and first.json()["code"] == "owner_unreachable", first.text
            await wait_until(lambda: _run_accepted(b, conversation_id), timeout=WAIT, what="B to take over")
        await client.wait_for(is_finished, "the run's end after the takeover, on B")

    stored = await all_events(b, conversation_id, include_subagents="true")
    stored_ids = {e["id"] for e in stored}
    assert all(e["id"] in stored_ids for e in seen_before)  # what anyone saw was stored
    own = await all_events(b, conversation_id)
    assert any(e["kind"] == "MessageEvent" and e["content"] == NOTE for e in own)
    # The calls A left running were closed honestly before B went on.
    task_results = [e for e in own if e["kind"] == "ObservationEvent" and e["tool_name"] == "task"]
    assert [r["status"] for r in task_results] == ["failed", "failed"]
    statuses = [e["value"] for e in own if e["kind"] == "ConversationStateUpdateEvent" and e["key"] == "status"]
    assert statuses[-3:] == ["paused", "running", "finished"]
    finish = [e for e in own if e["kind"] == "ActionEvent" and e["tool_name"] == "finish"]
    assert finish[-1]["arguments"]["message"] == "Done, and I read the note sent through replica B."
    assert_every_stored_event_once_in_order(client, stored)


async def _run_accepted(replica: Replica, conversation_id: str) -> bool:
    response = await replica.client.post(f"/api/conversations/{conversation_id}/run")
    if response.status_code == 503:
        return False
    assert response.status_code == 200, response.text
    return True
