"""Permissions across replicas: an answer posted to the replica that does not own the
conversation reaches the owner over the bus, and the first answer wins across replicas too."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import websockets

from tests.api.helpers import all_events, scripted_agent
from tests.permissions.helpers import finish, lane, terminal
from tests.scaleout.conftest import Cluster, Replica
from tests.scaleout.test_two_replicas import lease_holder
from tests.services import wait_until

WAIT = 90.0

SCRIPT = json.dumps({"strict": True, "lanes": [lane(
    "main", None,
    {"tool_calls": [terminal("echo first")]},
    {"tool_calls": [terminal("echo second")]},
    {"tool_calls": [finish("both done")]},
)]})


async def waiting_on(replica: Replica, conversation_id: str, asked: set[str]) -> dict[str, Any]:
    """The next request, as any replica reads it from the store."""
    found: list[dict[str, Any]] = []

    async def new_one() -> bool:
        nonlocal found
        found = [r for r in (await replica.client.get(f"/api/conversations/{conversation_id}/permissions")).json()
                 if r["request_id"] not in asked]
        return bool(found)

    await wait_until(new_one, timeout=WAIT, what="a permission request")
    return found[0]


async def answer_by_frame(replica: Replica, conversation_id: str, request_id: str) -> dict[str, Any]:
    async with websockets.connect(f"{replica.ws_url}/sockets/events/{conversation_id}") as socket:
        await socket.send(json.dumps({"type": "permission", "request_id": request_id, "decision": "allow"}))
        async with asyncio.timeout(WAIT):
            async for message in socket:
                frame = json.loads(message)
                if frame.get("type") == "permission_answer":
                    return frame
    raise AssertionError("the socket closed without answering")


async def test_an_answer_posted_to_the_other_replica_reaches_the_owner(cluster: Cluster) -> None:
    a, b = cluster.a, cluster.b
    body = {"agent": scripted_agent(SCRIPT, approval="always"), "initial_message": "Go."}
    created = await a.client.post("/api/conversations", json=body)
    assert created.status_code == 201, created.text
    cid = created.json()["id"]

    first = await waiting_on(b, cid, set())
    assert await lease_holder(cluster.database_url, cid) == a.replica_id
    answered = await b.client.post(f"/api/conversations/{cid}/permissions/{first['request_id']}",
                                   json={"decision": "allow", "reason": "via B"})
    assert answered.status_code == 200, answered.text
    assert answered.json()["outcome"] == "allowed" and answered.json()["answered_by"] == "rest"

    # The second: a socket frame on B and a POST on A at once; one wins, on the owner.
    second = await waiting_on(a, cid, {first["request_id"]})
    frame, posted = await asyncio.gather(
        answer_by_frame(b, cid, second["request_id"]),
        a.client.post(f"/api/conversations/{cid}/permissions/{second['request_id']}", json={"decision": "reject"}),
    )
    assert sorted([frame["status"], posted.status_code]) == [200, 409]

    async def finished() -> bool:
        return (await b.client.get(f"/api/conversations/{cid}")).json()["status"] == "finished"

    await wait_until(finished, timeout=WAIT, what="the run to finish on replica A")
    events = await all_events(b, cid)
    outputs = [e["content"] for e in events if e["kind"] == "ObservationEvent" and e["tool_name"] == "terminal"]
    assert "first" in outputs[0]  # ran on the owner, once B's answer reached it
    resolved = [e for e in events if e["kind"] == "PermissionResolvedEvent"]
    assert [e["request_id"] for e in resolved] == [first["request_id"], second["request_id"]]
    late = await b.client.post(f"/api/conversations/{cid}/permissions/{first['request_id']}", json={"decision": "allow"})
    assert late.status_code == 409


async def test_when_the_owner_dies_a_late_answer_on_the_other_replica_is_409_after_its_takeover(cluster: Cluster) -> None:
    a, b = cluster.a, cluster.b
    body = {"agent": scripted_agent(SCRIPT, approval="always"), "initial_message": "Go."}
    cid = (await a.client.post("/api/conversations", json=body)).json()["id"]
    request = await waiting_on(b, cid, set())
    await a.kill()
    path = f"/api/conversations/{cid}/permissions/{request['request_id']}"
    answered: list[Any] = []

    async def taken_over() -> bool:
        # 503 owner_unreachable until A's lease lapses; then B takes the conversation over,
        # which resolves the request nobody waits for any more.
        response = await b.client.post(path, json={"decision": "allow"})
        assert response.status_code in (503, 409), response.text
        answered.append(response)
        return response.status_code == 409

    await wait_until(taken_over, timeout=WAIT, what="B to take the conversation over")
    assert answered[-1].json()["code"] == "permission_resolved"
    [entry] = (await b.client.get(f"/api/conversations/{cid}/permissions", params={"status": "all"})).json()
    assert entry["status"] == "cancelled" and entry["resolution"]["answered_by"] == "server"
    events = await all_events(b, cid)
    closing = [e for e in events if e["kind"] == "ObservationEvent" and e["tool_call_id"] == request["tool_call_id"]]
    assert [e["status"] for e in closing] == ["cancelled"]
    assert (await b.client.get(f"/api/conversations/{cid}")).json()["status"] == "paused"
