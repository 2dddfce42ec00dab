"""A request that waits when its run stops: interrupt, sub-agent cancel, delete, kill -9 and
restart, a client that leaves, and answers that are not answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.api.helpers import all_events, create, scripted_agent
from tests.permissions.helpers import answer, one_asker_script, pending, pending_sets, reading, wait_pending
from tests.servers import RunningServer, ServerProcess, isolated_settings, taskwire_server, wait_for_status
from tests.services import wait_until


def closed_call(events: list[dict[str, Any]], tool_call_id: str) -> dict[str, Any]:
    [closing] = [e for e in events if e["kind"] == "ObservationEvent" and e["tool_call_id"] == tool_call_id]
    return closing


async def start_waiting(server: RunningServer, script: str | None = None) -> tuple[str, dict[str, Any]]:
    info = await create(server, agent=scripted_agent(script or one_asker_script(), approval="always"), initial_message="Go.")
    [request] = await wait_pending(server, info["id"], 1)
    return info["id"], request


async def assert_cancelled_and_closed(server: RunningServer, cid: str, request: dict[str, Any], reason: str) -> None:
    [entry] = await pending(server, cid, status="all")
    assert entry["status"] == "cancelled"
    assert entry["resolution"]["answered_by"] == "server" and reason in entry["resolution"]["reason"]
    assert entry["resolution"]["subagent_id"] == request["subagent_id"]
    everything = await all_events(server, cid, include_subagents="true")
    closing = closed_call(everything, request["tool_call_id"])
    # It never ran: closed as cancelled, in the sub-agent's stream, stamped.
    assert closing["status"] == "cancelled" and closing["is_error"]
    assert closing["subagent_id"] == request["subagent_id"]
    assert pending_sets(await all_events(server, cid))[-1] == set()
    late = await answer(server, cid, request["request_id"], decision="allow")
    assert late.status_code == 409 and late.json()["code"] == "permission_resolved"


async def test_interrupting_the_root_cancels_its_waiting_requests_and_closes_their_calls(server: RunningServer) -> None:
    cid, request = await start_waiting(server)
    assert (await server.client.post(f"/api/conversations/{cid}/interrupt")).status_code < 300
    assert (await wait_for_status(server.client, cid, {"paused"}))["status"] == "paused"
    await assert_cancelled_and_closed(server, cid, request, "interrupted")


async def test_cancelling_the_asking_subagent_cancels_its_request_and_its_parent_goes_on(server: RunningServer) -> None:
    cid, request = await start_waiting(server)
    cancel = await server.client.post(f"/api/conversations/{cid}/subagents/{request['subagent_id']}/cancel")
    assert cancel.status_code == 202
    assert (await wait_for_status(server.client, cid, {"finished", "error"}))["status"] == "finished"
    await assert_cancelled_and_closed(server, cid, request, "cancelled")


async def test_deleting_the_conversation_while_it_waits_leaves_nothing_waiting(server: RunningServer) -> None:
    cid, request = await start_waiting(server)
    assert (await server.client.delete(f"/api/conversations/{cid}")).status_code < 300
    late = await answer(server, cid, request["request_id"], decision="allow")
    assert late.status_code == 404 and late.json()["code"] == "conversation_not_found"
    assert server.runtime.loaded(cid) is None


async def test_a_client_that_leaves_resolves_nothing(server: RunningServer) -> None:
    cid, request = await start_waiting(server)
    async with reading(server, cid) as socket:
        await socket.wait_for(lambda f: f.get("key") == "pending_permissions" and f["value"], "the waiting set")
    # Gone: the request still waits, and the next client answers it.
    assert [r["request_id"] for r in await pending(server, cid)] == [request["request_id"]]
    assert (await answer(server, cid, request["request_id"], decision="allow")).status_code == 200
    assert (await wait_for_status(server.client, cid, {"finished"}))["status"] == "finished"


async def test_answers_that_are_not_answers_are_refused_with_the_reason(server: RunningServer) -> None:
    cid, request = await start_waiting(server)
    path = f"/api/conversations/{cid}/permissions"
    rid = request["request_id"]
    offered = await answer(server, cid, rid, option_id="allow-with-updates")
    assert offered.status_code == 422 and offered.json()["code"] == "invalid_permission_answer"
    assert "allow_once" in offered.json()["detail"]
    for body in ({}, {"decision": "maybe"}, {"option_id": "allow_once", "decision": "allow"}, {"option_id": 3},
                 {"decision": "allow", "reason": "x" * 5000}):
        bad = await server.client.post(f"{path}/{rid}", json=body)
        assert bad.status_code == 422 and bad.json()["code"] == "invalid_request", body
    not_json = await server.client.post(f"{path}/{rid}", content=b"{", headers={"content-type": "application/json"})
    assert not_json.status_code == 422
    unknown = await answer(server, cid, "no-such-request", decision="allow")
    assert unknown.status_code == 404 and unknown.json()["code"] == "permission_not_found"
    assert (await server.client.post(f"/api/conversations/nope/permissions/{rid}", json={"decision": "allow"})).status_code == 404
    assert (await server.client.get(path, params={"status": "some"})).status_code == 422
    async with reading(server, cid) as socket:
        await socket.send({"type": "permission", "request_id": rid, "option_id": "nope"})
        await socket.send({"type": "permission", "request_id": rid, "decision": "perhaps"})
        await socket.send({"type": "permission", "request_id": "no-such-request", "decision": "allow"})
        await socket.send({"type": "permission", "decision": "allow"})
        await socket.wait_for(lambda f: f.get("type") == "error", "the error frame")
        answers = [f for f in socket.frames if f.get("type") == "permission_answer"]
        errors = [f for f in socket.frames if f.get("type") == "error"]
    assert [(a["request_id"], a["status"], a["code"]) for a in answers] == [
        (rid, 422, "invalid_permission_answer"), (rid, 422, "invalid_permission_answer"),
        ("no-such-request", 404, "permission_not_found"),
    ]
    assert errors[0]["code"] == "invalid_frame" and "request_id" in errors[0]["detail"]
    # Still waiting, and still answerable.
    assert [r["request_id"] for r in await pending(server, cid)] == [rid]
    assert (await answer(server, cid, rid, option_id="reject_once")).status_code == 200


async def test_after_a_kill_and_a_restart_a_waiting_request_is_cancelled_and_a_late_answer_is_409(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, forward_subagent_events=True)
    first = ServerProcess.sharing("first", tmp_path, settings)
    await first.start()
    try:
        body = {"agent": scripted_agent(one_asker_script(after={"text": "went on"}), approval="always"), "initial_message": "Go."}
        cid = (await first.client.post("/api/conversations", json=body)).json()["id"]

        async def asked() -> bool:
            return len((await first.client.get(f"/api/conversations/{cid}/permissions")).json()) == 1

        await wait_until(asked, timeout=60, what="the sub-agent to ask")
        [request] = (await first.client.get(f"/api/conversations/{cid}/permissions")).json()
    finally:
        await first.kill()
        await first.client.aclose()

    async with taskwire_server(settings) as server:
        assert (await server.client.get(f"/api/conversations/{cid}")).json()["status"] == "paused"
        [entry] = await pending(server, cid, status="all")
        assert entry["status"] == "cancelled" and "stopped" in entry["resolution"]["reason"]
        everything = await all_events(server, cid, include_subagents="true")
        assert closed_call(everything, request["tool_call_id"])["status"] == "cancelled"
        assert closed_call(everything, request["parent_tool_use_id"])["status"] == "failed"  # the task call ran
        assert pending_sets(await all_events(server, cid))[-1] == set()
        late = await answer(server, cid, request["request_id"], decision="allow")
        assert late.status_code == 409
        # Nothing is left waiting: the conversation goes on from its stored events (the main
        # agent's next turn finishes).
        await server.client.post(f"/api/conversations/{cid}/run")
        assert (await wait_for_status(server.client, cid, {"finished", "error"}))["status"] == "finished"
