"""``permissions: "ask"``: a bridged ACP peer's ``session/request_permission`` asked of a person.

The recorded claude-agent-acp session (a main-agent call and one in each of two parallel
sub-agents, every one asking) is replayed by a fake peer that waits for taskwire's answer to
each request, as the real one did, and writes down what it received.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from tests.acp.helpers import HERE, agent_pids, alive, last_per_call
from tests.acp.test_delegation import write_fake_acp_type
from tests.api.helpers import all_events, create, scripted_agent
from tests.permissions.helpers import answer, answer_after_idle_timeout, pending, pending_sets, reading, wait_pending
from tests.servers import RunningServer, ServerProcess, isolated_settings, taskwire_server, wait_for_status
from tests.services import wait_until

RECORDING = HERE / "fixtures" / "permission_subagents.acp.jsonl"
REPLAY_AGENT = HERE / "replay_agent.py"
MAIN_CALL = "toolu_main_0_1_0002"
AGENT_A, AGENT_B = "toolu_main_1_1_0007", "toolu_main_1_2_0008"
CALL_A, CALL_B = "toolu_subagenta_0_0_0012", "toolu_subagentb_0_0_0014"
PEER_OPTIONS = [("allow-once", "allow_once"), ("allow-with-updates", "allow_always"), ("reject", "reject_once")]


def replayed_peer(tmp_path: Path, recording: Path = RECORDING) -> dict[str, Any]:
    """An ``acp`` agent replaying ``recording``, asking a person; what it receives goes to
    ``tmp_path/answers.jsonl``."""
    return {
        "kind": "acp",
        "command": sys.executable,
        "args": [str(REPLAY_AGENT), str(recording)],
        "env": {"REPLAY_ANSWERS": str(tmp_path / "answers.jsonl"), "FAKE_AGENT_PID_FILE": str(tmp_path / "agent.pids")},
        "permissions": "ask",
        "startup_timeout": 30,
        "idle_timeout": 60,
    }


def peer_received(tmp_path: Path) -> list[Any]:
    """The outcome of each answer the peer got, in order: an ``optionId`` or ``cancelled``."""
    path = tmp_path / "answers.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [line["result"]["outcome"].get("optionId", line["result"]["outcome"]["outcome"]) for line in lines]


async def subagent_of(server: RunningServer, conversation_id: str, agent_call: str) -> str:
    listed = (await server.client.get(f"/api/conversations/{conversation_id}/subagents")).json()
    return next(s["subagent_id"] for s in listed if s["parent_tool_use_id"] == agent_call)


async def test_replayed_requests_are_filed_under_their_subagents_and_the_chosen_option_reaches_the_peer(
    forwarding_server: RunningServer, tmp_path: Path
) -> None:
    server = forwarding_server
    info = await create(server, agent=replayed_peer(tmp_path), run=False)
    cid = info["id"]
    async with reading(server, cid) as socket:
        await socket.wait_for(lambda f: f.get("key") == "full_state", "full_state")
        await server.client.post(f"/api/conversations/{cid}/events", json={"content": "go"})

        [main] = await wait_pending(server, cid, 1)
        assert main["tool_call_id"] == MAIN_CALL and "subagent_id" not in main
        assert [(o["option_id"], o["kind"]) for o in main["options"]] == PEER_OPTIONS
        assert main["tool_name"] == "Bash" and main["arguments"]["command"] == "python3 -c 'print(\"main-ok\")'"
        refused = await answer(server, cid, main["request_id"], option_id="allow_once")  # taskwire's id, not the peer's
        assert refused.status_code == 422 and "allow-once" in refused.json()["detail"]
        assert (await answer(server, cid, main["request_id"], option_id="allow-once")).status_code == 200

        [from_a] = await wait_pending(server, cid, 1)
        sub_a = await subagent_of(server, cid, AGENT_A)
        assert (from_a["tool_call_id"], from_a["subagent_id"], from_a["parent_tool_use_id"]) == (CALL_A, sub_a, AGENT_A)
        await socket.send({"type": "permission", "request_id": from_a["request_id"], "decision": "allow"})
        answered = await socket.wait_for(lambda f: f.get("type") == "permission_answer", "the socket's answer")
        assert answered["status"] == 200

        [from_b] = await wait_pending(server, cid, 1)
        sub_b = await subagent_of(server, cid, AGENT_B)
        assert (from_b["tool_call_id"], from_b["subagent_id"], from_b["parent_tool_use_id"]) == (CALL_B, sub_b, AGENT_B)
        rejected = await answer(server, cid, from_b["request_id"], decision="reject", reason="not b")
        assert rejected.status_code == 200 and rejected.json()["outcome"] == "rejected"
        assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] == "finished"
        await socket.wait_for(lambda f: f.get("key") == "status" and f.get("value") == "finished", "the end")
        live = socket.events

    # The peer received exactly the optionIds chosen, as it offered them.
    assert peer_received(tmp_path) == ["allow-once", "allow-once", "reject"]
    # Each request and its answer arrived live, stamped like the asking sub-agent's other events.
    for request, subagent, spawner in ((from_a, sub_a, AGENT_A), (from_b, sub_b, AGENT_B)):
        kinds = [f["kind"] for f in live if f.get("request_id") == request["request_id"]]
        assert kinds == ["PermissionRequestEvent", "PermissionResolvedEvent"]
        for frame in (f for f in live if f.get("request_id") == request["request_id"]):
            assert (frame["subagent_id"], frame["parent_tool_use_id"]) == (subagent, spawner)
    # The rejected call ends failed, in B's stream; A's ran.
    calls_b = last_per_call(await all_events(server, sub_b))
    assert calls_b[CALL_B]["status"] == "failed" and calls_b[CALL_B]["subagent_id"] == sub_b
    assert last_per_call(await all_events(server, sub_a))[CALL_A]["status"] == "completed"
    # The root's pending set came and went, one request at a time.
    root = await all_events(server, cid)
    assert pending_sets(root) == [{main["request_id"]}, set(), {from_a["request_id"]}, set(), {from_b["request_id"]}, set()]
    resolved = {e["request_id"]: e for e in await pending(server, cid, status="all")}
    assert [resolved[r["request_id"]]["resolution"]["answered_by"] for r in (main, from_a, from_b)] == ["rest", "socket", "rest"]
    assert resolved[from_b["request_id"]]["resolution"]["reason"] == "not b"


async def test_a_request_naming_an_unknown_parent_is_filed_with_its_call(forwarding_server: RunningServer, tmp_path: Path) -> None:
    # B's call (and its request) name a spawning call the peer never announced.
    recording = tmp_path / "unknown_parent.acp.jsonl"
    recording.write_text(RECORDING.read_text().replace(f'"parentToolUseId": "{AGENT_B}"', '"parentToolUseId": "toolu_nowhere"'))
    server = forwarding_server
    cid = (await create(server, agent=replayed_peer(tmp_path, recording), initial_message="go"))["id"]
    for _ in range(2):
        [request] = await wait_pending(server, cid, 1)
        assert (await answer(server, cid, request["request_id"], decision="allow")).status_code == 200
    [orphan] = await wait_pending(server, cid, 1)
    assert orphan["tool_call_id"] == CALL_B and orphan["parent_tool_use_id"] == "toolu_nowhere"
    # Its request sits in the same stream as the call's own events.
    stream = await all_events(server, orphan["subagent_id"])
    assert CALL_B in last_per_call(stream)
    assert (await answer(server, cid, orphan["request_id"], decision="reject")).status_code == 200
    assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] == "finished"
    assert peer_received(tmp_path) == ["allow-once", "allow-once", "reject"]


async def test_the_peer_dying_while_a_request_waits_cancels_it(forwarding_server: RunningServer, tmp_path: Path) -> None:
    server = forwarding_server
    cid = (await create(server, agent=replayed_peer(tmp_path), initial_message="go"))["id"]
    [main] = await wait_pending(server, cid, 1)
    [pid] = agent_pids(tmp_path)
    os.kill(pid, signal.SIGKILL)
    info = await wait_for_status(server.client, cid, {"finished", "error", "paused"})
    assert info["status"] == "error"
    [entry] = await pending(server, cid, status="all")
    assert entry["status"] == "cancelled" and entry["resolution"]["answered_by"] == "server"
    assert "exited" in entry["resolution"]["reason"]
    assert await pending(server, cid) == []
    assert pending_sets(await all_events(server, cid))[-1] == set()
    late = await answer(server, cid, main["request_id"], decision="allow")
    assert late.status_code == 409
    # The call that waited never ran: closed cancelled.
    assert last_per_call(await all_events(server, cid))[MAIN_CALL]["status"] == "cancelled"


async def test_interrupting_while_a_request_waits_cancels_it_and_tells_the_peer(
    forwarding_server: RunningServer, tmp_path: Path
) -> None:
    server = forwarding_server
    cid = (await create(server, agent=replayed_peer(tmp_path), initial_message="go"))["id"]
    [main] = await wait_pending(server, cid, 1)
    assert (await server.client.post(f"/api/conversations/{cid}/interrupt")).status_code < 300
    await wait_for_status(server.client, cid, {"finished", "error", "paused"})
    [entry] = await pending(server, cid, status="all")
    assert entry["status"] == "cancelled" and entry["request_id"] == main["request_id"]
    # The replay goes on as recorded (it ignores session/cancel): what it asks while the turn
    # stops is answered cancelled too, and never filed.
    assert set(peer_received(tmp_path)) == {"cancelled"}
    assert (await answer(server, cid, main["request_id"], decision="allow")).status_code == 409


async def test_an_acp_subagent_under_a_parent_that_asks_asks_too(forwarding_server: RunningServer, tmp_path: Path) -> None:
    # A native root with `approval: always` delegates to an ACP sub-agent whose spec says
    # nothing of permissions: the inherited policy makes its peer's request a person's.
    server = forwarding_server
    workspace = tmp_path / "project"
    write_fake_acp_type(workspace, tmp_path / "agent.pids")
    script = json.dumps({"lanes": [{"name": "main", "turns": [
        {"tool_calls": [{"name": "task", "id": "call_delegate_1", "arguments": {
            "description": "Ask through ACP", "prompt": "permission", "subagent_type": "fake-acp"}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"message": "delegated"}}]},
    ]}]})
    cid = (await create(server, agent=scripted_agent(script, approval="always"), workspace=str(workspace),
                        initial_message="Delegate."))["id"]
    [request] = await wait_pending(server, cid, 1)
    assert (request["tool_call_id"], request["parent_tool_use_id"]) == ("main-p", "call_delegate_1")
    assert [o["option_id"] for o in request["options"]] == ["yes", "no"]
    assert (await answer(server, cid, request["request_id"], option_id="no")).status_code == 200
    assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] == "finished"
    call = last_per_call(await all_events(server, request["subagent_id"]))["main-p"]
    assert (call["status"], call["raw_output"]) == ("failed", "permission: no")


async def test_a_person_taking_longer_than_the_idle_timeout_does_not_fail_the_turn(
    forwarding_server: RunningServer, tmp_path: Path
) -> None:
    server = forwarding_server
    agent = {**replayed_peer(tmp_path), "idle_timeout": 0.5}
    cid = (await create(server, agent=agent, initial_message="go"))["id"]
    assert await answer_after_idle_timeout(server, cid, 2) == "finished"


async def test_after_a_kill_and_a_restart_a_peers_waiting_request_is_cancelled(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, forward_subagent_events=True)
    first = ServerProcess.sharing("first", tmp_path, settings)
    await first.start()
    try:
        body = {"agent": replayed_peer(tmp_path), "initial_message": "go"}
        cid = (await first.client.post("/api/conversations", json=body)).json()["id"]
        [main] = await wait_pending(first, cid, 1)
        assert (await answer(first, cid, main["request_id"], decision="allow")).status_code == 200
        [from_a] = await wait_pending(first, cid, 1)
        assert from_a["tool_call_id"] == CALL_A
    finally:
        await first.kill()
        await first.client.aclose()

    async with taskwire_server(settings) as server:
        statuses = {e["request_id"]: e["status"] for e in await pending(server, cid, status="all")}
        assert statuses == {main["request_id"]: "allowed", from_a["request_id"]: "cancelled"}
        call = last_per_call(await all_events(server, from_a["subagent_id"]))[CALL_A]
        assert call["status"] == "cancelled" and call["subagent_id"] == from_a["subagent_id"]  # it never ran
        assert pending_sets(await all_events(server, cid))[-1] == set()
        assert (await answer(server, cid, from_a["request_id"], decision="allow")).status_code == 409
    for pid in agent_pids(tmp_path):  # the orphaned peer reads its closed stdin and exits
        await wait_until(lambda: not alive(pid), timeout=30, what="the peer of the killed server to exit")


async def test_a_request_nobody_answers_in_time_sends_the_peer_its_reject_option(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, approval_timeout_s=0.5)) as server:
        cid = (await create(server, agent=replayed_peer(tmp_path), initial_message="go"))["id"]
        assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] == "finished"
        outcomes = [(e["status"], e["resolution"]["answered_by"]) for e in await pending(server, cid, status="all")]
    assert outcomes == [("timed_out", "timeout")] * 3
    assert peer_received(tmp_path) == ["reject", "reject", "reject"]  # the peer's own reject option


async def test_deleting_the_conversation_while_a_request_waits_tells_the_peer_and_ends_it(
    forwarding_server: RunningServer, tmp_path: Path
) -> None:
    server = forwarding_server
    cid = (await create(server, agent=replayed_peer(tmp_path), initial_message="go"))["id"]
    await wait_pending(server, cid, 1)
    assert (await server.client.delete(f"/api/conversations/{cid}")).status_code == 204
    assert peer_received(tmp_path)[0] == "cancelled"
    assert not any(alive(pid) for pid in agent_pids(tmp_path))
