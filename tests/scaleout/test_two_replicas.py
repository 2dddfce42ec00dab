"""Two replicas behind no load balancer at all: a client on one sees a run on the other."""

from __future__ import annotations

from typing import Any

import asyncpg

from tests.api.helpers import all_events
from tests.scaleout.conftest import Cluster, is_finished, start_run, watched_run
from tests.services import wait_until

NOTE = "A note sent through replica B."


def assert_stamped(events: list[dict[str, Any]], task_call_ids: set[str]) -> None:
    """Sub-agent events carry the spawning call and their sub-agent; the root's carry neither."""
    started = [e for e in events if e["kind"] == "SubagentStartedEvent"]
    assert {e["parent_tool_use_id"] for e in started} == task_call_ids
    subagents = {e["subagent_id"]: e["parent_tool_use_id"] for e in started}
    for event in events:
        if "subagent_id" in event:
            assert subagents[event["subagent_id"]] == event["parent_tool_use_id"], event
        else:
            assert "parent_tool_use_id" not in event, event


async def lease_holder(database_url: str, conversation_id: str) -> str | None:
    conn = await asyncpg.connect(database_url)  # its ?search_path= picks the test's schema
    try:
        return await conn.fetchval("SELECT owner FROM leases WHERE conversation_id = $1", conversation_id)
    finally:
        await conn.close()


async def test_a_client_on_replica_b_sees_a_run_on_replica_a_and_its_message_reaches_a(cluster: Cluster) -> None:
    b = cluster.b
    async with watched_run(cluster) as (conversation_id, client):
        assert await lease_holder(cluster.database_url, conversation_id) == cluster.a.replica_id
        sent = await b.client.post(f"/api/conversations/{conversation_id}/events",
                                   json={"role": "user", "content": NOTE, "run": True})
        assert sent.status_code == 202, sent.text
        await client.wait_for(is_finished, "the run's end, seen on replica B")

    # B's client got every stored event of the tree, stamped, once, in seq order.
    assert client.frames[0]["key"] == "full_state"
    stored = await all_events(b, conversation_id, include_subagents="true")
    seqs = [e["seq"] for e in client.events]
    assert seqs == sorted(set(seqs))
    assert client.events == stored
    own = await all_events(b, conversation_id)
    task_calls = {e["tool_call_id"] for e in own if e["kind"] == "ActionEvent" and e["tool_name"] == "task"}
    assert len(task_calls) == 2
    assert_stamped(client.events, task_calls)
    assert {e["subagent_id"] for e in client.events if "subagent_id" in e} and len(stored) > len(own)

    # REST search on B finds them.
    found = await all_events(b, conversation_id, include_subagents="true", body="subagent-b has its answer")
    assert found and all(e["parent_tool_use_id"] in task_calls for e in found)
    count = await b.client.get(f"/api/conversations/{conversation_id}/events/count", params={"include_subagents": "true"})
    assert count.json() == len(stored)

    # The note sent to B reached the run on A: the model answered it, and A gave the lease up.
    assert any(e["kind"] == "MessageEvent" and e["content"] == NOTE for e in own)
    finish = [e for e in own if e["kind"] == "ActionEvent" and e["tool_name"] == "finish"]
    assert finish[-1]["arguments"]["message"] == "Done, and I read the note sent through replica B."
    await wait_until(lambda: _no_lease(cluster, conversation_id), timeout=30, what="the lease to be given up")
    info = (await b.client.get(f"/api/conversations/{conversation_id}")).json()
    assert info["status"] == "finished" and info["last_seq"] == stored[-1]["seq"]


async def _no_lease(cluster: Cluster, conversation_id: str) -> bool:
    return await lease_holder(cluster.database_url, conversation_id) is None


async def test_commands_sent_to_b_run_on_a_and_their_errors_come_back(cluster: Cluster) -> None:
    a, b = cluster.a, cluster.b
    conversation_id = await start_run(cluster)
    subagents = f"/api/conversations/{conversation_id}/subagents"
    await wait_until(lambda: _running_subagents(b, subagents, 2), timeout=60, what="two sub-agents running on A")
    first = next(s for s in (await b.client.get(subagents)).json() if s["description"] == "Echo subagent-a")
    cancelled = await b.client.post(f"{subagents}/{first['subagent_id']}/cancel")
    assert cancelled.status_code == 202, cancelled.text
    await wait_until(lambda: _subagent_status(b, subagents, first["subagent_id"], "cancelled"), timeout=60,
                     what="the sub-agent on A to be cancelled")
    again = await b.client.post(f"/api/conversations/{conversation_id}/run")
    assert again.status_code == 409 and again.json()["code"] == "conversation_running"
    unknown = await b.client.post(f"{subagents}/nope/cancel")
    assert unknown.status_code == 404
    paused = await b.client.post(f"/api/conversations/{conversation_id}/interrupt")
    assert paused.status_code == 200, paused.text
    await wait_until(lambda: _status_is(a, conversation_id, "paused"), timeout=30, what="the run on A to stop")
    # Not running: owned by nobody, so the replica asked runs it.
    resumed = await b.client.post(f"/api/conversations/{conversation_id}/run")
    assert resumed.status_code == 200, resumed.text
    assert await lease_holder(cluster.database_url, conversation_id) == cluster.b.replica_id
    await wait_until(lambda: _status_is(a, conversation_id, "finished"), timeout=60, what="the run on B to finish")


async def _running_subagents(replica: Any, path: str, count: int) -> bool:
    return sum(s["status"] == "running" for s in (await replica.client.get(path)).json()) >= count


async def _subagent_status(replica: Any, path: str, subagent_id: str, status: str) -> bool:
    return any(s["subagent_id"] == subagent_id and s["status"] == status for s in (await replica.client.get(path)).json())


async def _status_is(replica: Any, conversation_id: str, status: str) -> bool:
    return (await replica.client.get(f"/api/conversations/{conversation_id}")).json()["status"] == status
