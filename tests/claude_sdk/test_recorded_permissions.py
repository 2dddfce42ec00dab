"""The recorded Claude Code session whose commands all ask (``permission_subagents.sdk.jsonl``),
replayed with ``permissions: "ask"``: each recorded ``can_use_tool`` call waits for a person's
answer, and lands in the agent that asked."""

from __future__ import annotations

import json
from pathlib import Path

from tests.api.helpers import all_events, create, scripted_agent
from tests.claude_sdk.watch import replay_agent
from tests.permissions.helpers import answer, answer_after_idle_timeout, answer_each, pending, reading, wait_pending
from tests.servers import isolated_settings, taskwire_server, wait_for_status

RECORDING = Path(__file__).parent / "permission_subagents.sdk.jsonl"
MAIN_CALL = "toolu_main_0_1_0002"
AGENT_A, AGENT_B = "toolu_main_1_1_0005", "toolu_main_1_2_0006"
CALL_A, CALL_B = "toolu_subagenta_0_0_0009", "toolu_subagentb_0_0_0012"


async def test_replayed_can_use_tool_calls_are_filed_under_the_asking_subagents(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        cid = (await create(server, agent=replay_agent(RECORDING, permissions="ask"), run=False))["id"]
        async with reading(server, cid) as socket:
            await socket.wait_for(lambda f: f.get("key") == "full_state", "full_state")
            await server.client.post(f"/api/conversations/{cid}/events", json={"content": "go"})
            [main] = await wait_pending(server, cid, 1)
            assert main["tool_call_id"] == MAIN_CALL and "subagent_id" not in main
            assert (main["tool_name"], main["reason"]) == ("Bash", "This command requires approval")
            assert (await answer(server, cid, main["request_id"], option_id="yes")).status_code == 422
            assert (await answer(server, cid, main["request_id"], decision="allow")).status_code == 200

            [from_a] = await wait_pending(server, cid, 1)
            subagents = {s["parent_tool_use_id"]: s["subagent_id"] for s in
                         (await server.client.get(f"/api/conversations/{cid}/subagents")).json()}
            assert (from_a["tool_call_id"], from_a["subagent_id"]) == (CALL_A, subagents[AGENT_A])
            await socket.send({"type": "permission", "request_id": from_a["request_id"], "decision": "allow"})
            answered = await socket.wait_for(lambda f: f.get("type") == "permission_answer", "the socket's answer")
            assert answered["status"] == 200

            [from_b] = await wait_pending(server, cid, 1)
            assert (from_b["tool_call_id"], from_b["parent_tool_use_id"]) == (CALL_B, AGENT_B)
            assert from_b["subagent_id"] == subagents[AGENT_B]
            assert (await answer(server, cid, from_b["request_id"], decision="reject", reason="not b")).status_code == 200
            assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] == "finished"
            await socket.wait_for(lambda f: f.get("key") == "status" and f.get("value") == "finished", "the end")
            live = socket.events

        # Live, each request came stamped, after its call and in its sub-agent's stream.
        for request, spawner in ((from_a, AGENT_A), (from_b, AGENT_B)):
            frame = next(f for f in live if f["kind"] == "PermissionRequestEvent" and f["request_id"] == request["request_id"])
            assert (frame["subagent_id"], frame["parent_tool_use_id"]) == (subagents[spawner], spawner)
            stream = await all_events(server, subagents[spawner])
            kinds = [(e["kind"], e.get("tool_call_id")) for e in stream]
            assert kinds.index(("ACPToolCallEvent", request["tool_call_id"])) < kinds.index(
                ("PermissionRequestEvent", request["tool_call_id"]))
            # While it waited the call was pending; allowed, it ran.
            statuses = [e["status"] for e in stream if e["kind"] == "ACPToolCallEvent" and e["tool_call_id"] == request["tool_call_id"]]
            assert statuses[:2] == ["in_progress", "pending"] and statuses[-1] in ("completed", "failed")
        outcomes = {e["tool_call_id"]: e["status"] for e in await pending(server, cid, status="all")}
        assert outcomes == {MAIN_CALL: "allowed", CALL_A: "allowed", CALL_B: "rejected"}
        # The recorded denial came back to B as an error result; B went on and finished.
        b_stream = await all_events(server, subagents[AGENT_B])
        assert [e["status"] for e in b_stream if e.get("tool_call_id") == CALL_B and e["kind"] == "ACPToolCallEvent"][-1] == "failed"
        assert b_stream[-1]["kind"] == "SubagentFinishedEvent" and b_stream[-1]["status"] == "completed"


async def test_without_ask_the_recorded_callbacks_are_not_made(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        cid = (await create(server, agent=replay_agent(RECORDING), initial_message="go"))["id"]
        assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] == "finished"
        assert await pending(server, cid, status="all") == []
        assert not [e for e in await all_events(server, cid) if e["kind"] == "ConversationStateUpdateEvent"
                    and e["key"] == "pending_permissions"]


async def test_interrupting_while_a_recorded_call_waits_cancels_it_and_its_call(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        cid = (await create(server, agent=replay_agent(RECORDING, permissions="ask"), initial_message="go"))["id"]
        [main] = await wait_pending(server, cid, 1)
        assert (await server.client.post(f"/api/conversations/{cid}/interrupt")).status_code < 300
        assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] == "paused"
        [entry] = await pending(server, cid, status="all")
        assert (entry["request_id"], entry["status"]) == (main["request_id"], "cancelled")
        assert entry["resolution"]["answered_by"] == "server"
        # It never ran: the closing rule ends it cancelled.
        calls = [e for e in await all_events(server, cid) if e.get("tool_call_id") == MAIN_CALL and e["kind"] == "ACPToolCallEvent"]
        assert calls[-1]["status"] == "cancelled"
        assert (await answer(server, cid, main["request_id"], decision="allow")).status_code == 409


def delegating_to_replayed_claude(tmp_path: Path) -> tuple[Path, str]:
    """A workspace with the project type ``replayed-claude`` (the recording, as a claude_sdk
    sub-agent saying nothing of permissions), and a native script that hands it the job."""
    workspace = tmp_path / "project"
    folder = workspace / ".agents" / "agents"
    folder.mkdir(parents=True)
    front = {"name": "replayed-claude", "description": "Recorded Claude Code.",
             "agent": {"kind": "claude_sdk", "replay": str(RECORDING)}}
    (folder / "replayed-claude.md").write_text(f"---\n{json.dumps(front)}\n---\nUnused.\n")
    script = json.dumps({"lanes": [{"name": "main", "turns": [
        {"tool_calls": [{"name": "task", "id": "call_claude", "arguments": {
            "description": "Hand to Claude", "prompt": "go", "subagent_type": "replayed-claude"}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"message": "delegated"}}]},
    ]}]})
    return workspace, script


async def test_a_claude_sdk_subagent_under_a_parent_that_asks_asks_at_every_depth(tmp_path: Path) -> None:
    # A native root with `approval: always` delegates to a claude_sdk type that says nothing of
    # permissions: the inherited policy installs the callback, and each request lands in the
    # agent that asks, two and three levels down.
    workspace, script = delegating_to_replayed_claude(tmp_path)
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        cid = (await create(server, agent=scripted_agent(script, approval="always"), workspace=str(workspace),
                            initial_message="Delegate."))["id"]
        answered = {r["tool_call_id"]: r for r in await answer_each(server, cid, 3, lambda r: {"decision": "allow"})}
        assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] == "finished"
        tree = {s["parent_tool_use_id"]: s for s in (await server.client.get(f"/api/conversations/{cid}/subagents")).json()}
    claude = tree["call_claude"]["subagent_id"]
    assert (answered[MAIN_CALL]["subagent_id"], answered[MAIN_CALL]["parent_tool_use_id"]) == (claude, "call_claude")
    for call, spawner in ((CALL_A, AGENT_A), (CALL_B, AGENT_B)):
        assert (answered[call]["subagent_id"], answered[call]["parent_tool_use_id"]) == (tree[spawner]["subagent_id"], spawner)
        assert tree[spawner]["parent_subagent_id"] == claude


async def test_a_person_taking_longer_than_the_idle_timeout_does_not_fail_the_turn(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        agent = replay_agent(RECORDING, permissions="ask", idle_timeout=0.5)
        cid = (await create(server, agent=agent, initial_message="go"))["id"]
        assert await answer_after_idle_timeout(server, cid, 2) == "finished"


async def test_under_a_policy_that_names_other_tools_nobody_is_asked(tmp_path: Path) -> None:
    # `approval: [terminal]` installs the callback below, but Claude Code's Bash is not named:
    # it is refused at once, as without a callback, and no request is filed.
    workspace, script = delegating_to_replayed_claude(tmp_path)
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        cid = (await create(server, agent=scripted_agent(script, approval=["terminal"]), workspace=str(workspace),
                            initial_message="Delegate."))["id"]
        assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] == "finished"
        assert await pending(server, cid, status="all") == []


async def test_a_recorded_call_nobody_answers_in_time_is_denied(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, approval_timeout_s=0.5)) as server:
        cid = (await create(server, agent=replay_agent(RECORDING, permissions="ask"), initial_message="go"))["id"]
        assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] == "finished"
        outcomes = [(e["status"], e["resolution"]["answered_by"]) for e in await pending(server, cid, status="all")]
    assert outcomes == [("timed_out", "timeout")] * 3
