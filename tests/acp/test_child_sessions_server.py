"""Child sessions (the subagents RFD) end to end: a server driving the replayed claude-agent-acp
session recorded with ``clientCapabilities.subagents`` declared (two children, each asking
permission; the client cancels child A alone)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.acp.helpers import NATIVE_CANCEL_FIXTURE, NATIVE_FIXTURE, HERE, assert_stamped, last_per_call
from tests.api.helpers import all_events, create
from tests.api.socket_client import next_frame, open_socket
from tests.permissions.helpers import answer, pending, wait_pending
from tests.servers import RunningServer, wait_for_status

REPLAY_AGENT = HERE / "replay_agent.py"
AGENT_A, AGENT_B = "toolu_main_1_1_0007", "toolu_main_1_2_0008"
CHILD_A = "a2da4179b8d2a793d"
ROOT_SESSION = "7f97bfca-117f-4c13-8a90-ae7f89b37630"
"""The recorded session ids (the replay answers ``session/new`` as recorded)."""


def replayed(tmp_path: Path, recording: Path, **overrides: Any) -> dict[str, Any]:
    return {
        "kind": "acp",
        "command": sys.executable,
        "args": [str(REPLAY_AGENT), str(recording)],
        "env": {"REPLAY_ANSWERS": str(tmp_path / "answers.jsonl"), "REPLAY_REQUESTS": str(tmp_path / "requests.jsonl")},
        "startup_timeout": 30,
        "idle_timeout": 60,
        **overrides,
    }


def sent(tmp_path: Path, method: str) -> list[dict[str, Any]]:
    """What taskwire sent the peer with ``method``, in order."""
    lines = (tmp_path / "requests.jsonl").read_text().splitlines()
    return [m["params"] for m in map(json.loads, lines) if m.get("method") == method]


async def subagents(server: RunningServer, cid: str) -> dict[str, dict[str, Any]]:
    listed = (await server.client.get(f"/api/conversations/{cid}/subagents")).json()
    return {s["parent_tool_use_id"]: s for s in listed}


async def test_child_sessions_become_subagents_with_their_work_state(forwarding_server: RunningServer, tmp_path: Path) -> None:
    server = forwarding_server
    cid = (await create(server, agent=replayed(tmp_path, NATIVE_FIXTURE), initial_message="go"))["id"]
    assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] == "finished"
    [init] = sent(tmp_path, "initialize")
    assert init["clientCapabilities"]["subagents"] == {} and "_meta" not in init["clientCapabilities"]
    listed = await subagents(server, cid)
    assert set(listed) == {AGENT_A, AGENT_B}
    for launch, name in ((AGENT_A, "a"), (AGENT_B, "b")):
        entry = listed[launch]
        assert (entry["subagent_type"], entry["description"], entry["status"]) == ("general-purpose", f"Echo subagent-{name}", "completed")
        assert entry["work_state"] == {"state": "idle", "stop_reason": "end_turn"}
        assert entry["result"] == f"subagent-{name} done: the command printed subagent-{name}."
        events = await all_events(server, entry["subagent_id"])
        states = [e["value"] for e in events if e.get("key") == "work_state"]
        assert states == [{"state": "running", "cancellable": True}, {"state": "idle", "stop_reason": "end_turn"}]
        for event in events:
            assert_stamped(event, launch, entry["subagent_id"])
        assert last_per_call(events)[f"toolu_subagent{name}_0_0_00{'11' if name == 'a' else '14'}"]["status"] == "completed"
    # The parent's Agent calls, which the peer never sent in this form, are there with their answers.
    root_calls = last_per_call(await all_events(server, cid))
    assert root_calls[AGENT_A]["status"] == "completed" and "parent_tool_use_id" not in root_calls[AGENT_A]
    async with open_socket(server, cid) as ws:
        first = await next_frame(ws)
    assert first["key"] == "full_state"
    assert {s["work_state"]["state"] for s in first["value"]["subagents"]} == {"idle"}


async def test_subagent_sessions_off_declares_nothing(forwarding_server: RunningServer, tmp_path: Path) -> None:
    server = forwarding_server
    spec = replayed(tmp_path, HERE / "fixtures" / "two_subagents.acp.jsonl", subagent_sessions="off")
    cid = (await create(server, agent=spec, initial_message="go"))["id"]
    assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] == "finished"
    [init] = sent(tmp_path, "initialize")
    assert "subagents" not in init.get("clientCapabilities", {})  # (the package leaves out defaults)
    listed = await subagents(server, cid)
    # Derived for a peer that reports no work state: its end.
    assert {s["work_state"]["state"] for s in listed.values()} == {"idle"}


async def test_cancelled_child_ends_cancelled_while_its_sibling_finishes(forwarding_server: RunningServer, tmp_path: Path) -> None:
    server = forwarding_server
    cid = (await create(server, agent=replayed(tmp_path, NATIVE_CANCEL_FIXTURE, permissions="ask"), initial_message="go"))["id"]
    [from_b] = await wait_pending(server, cid, 1)
    listed = await subagents(server, cid)
    assert listed[AGENT_B]["work_state"] == {"state": "requires_action", "cancellable": True}  # as the peer reported it
    assert from_b["subagent_id"] == listed[AGENT_B]["subagent_id"]
    assert (await answer(server, cid, from_b["request_id"], option_id="allow-once")).status_code == 200
    [from_a] = await wait_pending(server, cid, 1)
    sub_a = (await subagents(server, cid))[AGENT_A]["subagent_id"]
    assert from_a["subagent_id"] == sub_a
    cancelled = await server.client.post(f"/api/conversations/{cid}/subagents/{sub_a}/cancel")
    assert cancelled.status_code == 202
    assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] == "finished"
    # The peer was told: A's request answered cancelled, then session/cancel naming A's session.
    outcomes = [json.loads(line)["result"]["outcome"] for line in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert outcomes == [{"outcome": "selected", "optionId": "allow-once"}, {"outcome": "cancelled"}]
    assert sent(tmp_path, "session/cancel") == [{"sessionId": CHILD_A}]
    listed = await subagents(server, cid)
    assert (listed[AGENT_A]["status"], listed[AGENT_A]["work_state"]) == ("cancelled", {"state": "idle", "stop_reason": "cancelled"})
    assert (listed[AGENT_B]["status"], listed[AGENT_B]["work_state"]) == ("completed", {"state": "idle", "stop_reason": "end_turn"})
    resolved = {e["request_id"]: e for e in await pending(server, cid, status="all")}
    assert resolved[from_a["request_id"]]["status"] == "cancelled"
    # A finished child cannot be cancelled again: a clear 400.
    again = await server.client.post(f"/api/conversations/{cid}/subagents/{sub_a}/cancel")
    assert again.status_code == 400 and again.json()["code"] == "subagent_not_running"


async def test_a_child_without_the_cancel_capability_is_not_cancellable(forwarding_server: RunningServer, tmp_path: Path) -> None:
    recording = tmp_path / "no_cancel.acp.jsonl"
    recording.write_text(NATIVE_CANCEL_FIXTURE.read_text().replace(', "capabilities": {"cancel": {}}', ""))
    server = forwarding_server
    cid = (await create(server, agent=replayed(tmp_path, recording, permissions="ask"), initial_message="go"))["id"]
    [from_b] = await wait_pending(server, cid, 1)
    refused = await server.client.post(f"/api/conversations/{cid}/subagents/{from_b['subagent_id']}/cancel")
    assert refused.status_code == 400 and refused.json()["code"] == "subagent_not_cancellable"
    await answer(server, cid, from_b["request_id"], option_id="allow-once")
    [from_a] = await wait_pending(server, cid, 1)
    await answer(server, cid, from_a["request_id"], option_id="allow-once")
    assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] == "finished"


async def test_interrupting_the_conversation_cancels_each_live_child_then_the_root(forwarding_server: RunningServer, tmp_path: Path) -> None:
    server = forwarding_server
    cid = (await create(server, agent=replayed(tmp_path, NATIVE_CANCEL_FIXTURE, permissions="ask"), initial_message="go"))["id"]
    [from_b] = await wait_pending(server, cid, 1)
    assert (await server.client.post(f"/api/conversations/{cid}/interrupt")).status_code == 200
    assert (await wait_for_status(server.client, cid, {"paused", "finished", "error"}))["status"] == "paused"
    # Both children were live and cancellable: each got its own session/cancel, before the root's.
    cancels = [c["sessionId"] for c in sent(tmp_path, "session/cancel")]
    assert sorted(cancels[:2]) == sorted([CHILD_A, "a3ee76a5e6b1f8085"]) and cancels[2:] == [ROOT_SESSION]
    resolved = {e["request_id"]: e for e in await pending(server, cid, status="all")}
    assert resolved[from_b["request_id"]]["status"] == "cancelled"
    listed = await subagents(server, cid)
    assert {s["status"] for s in listed.values()} <= {"cancelled", "completed"}
    assert all(s["work_state"]["state"] == "idle" for s in listed.values())


async def test_a_request_from_a_child_never_announced_is_answered_cancelled_not_misfiled(
    forwarding_server: RunningServer, tmp_path: Path
) -> None:
    # B's announcement and delegation are gone, and its frames name no launch: B cannot be placed.
    lines = NATIVE_CANCEL_FIXTURE.read_text().splitlines()
    kept = [line for line in lines if not ('"a3ee76a5e6b1f8085"' in line and ('subagent_update' in line or 'session_message' in line))]
    recording = tmp_path / "unannounced.acp.jsonl"
    recording.write_text("\n".join(line.replace('"parentToolUseId": "toolu_main_1_2_0008"', '"x": 1') for line in kept) + "\n")
    server = forwarding_server
    cid = (await create(server, agent=replayed(tmp_path, recording, permissions="ask"), initial_message="go"))["id"]
    [from_a] = await wait_pending(server, cid, 1)  # B's request never waits for a person
    assert from_a["parent_tool_use_id"] == AGENT_A
    await answer(server, cid, from_a["request_id"], option_id="allow-once")
    assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] in ("finished", "error")
    outcomes = [json.loads(line)["result"]["outcome"] for line in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert outcomes[0] == {"outcome": "cancelled"}  # B's, first in the recording
    assert set(await subagents(server, cid)) == {AGENT_A}
    assert all(e.get("tool_call_id") != "toolu_subagentb_0_0_0012" for e in await all_events(server, cid))
