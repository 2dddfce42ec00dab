"""The REAL claude-agent-acp 0.101.0 and Claude Code serving sub-agents as child sessions (the
subagents RFD, ``subagent_sessions: auto``), offline against ``mock-llm``, through the server.

Each run's wire is written next to the test's files by ``wire_recorder.py``; with
``TASKWIRE_RECORD_FIXTURES=1`` it is also copied into ``tests/acp/fixtures/`` (how the
``real_*.acp.jsonl`` fixtures were made). Needs ``peers/node_modules`` and ``node``: without
them these tests skip, except in CI, where they fail.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from taskwire.acp.toolcalls import text_of
from taskwire.runtime.agent_types import PROJECT_ROOT
from tests.acp.helpers import HERE, assert_stamped, last_per_call, wait_for_event
from tests.acp.test_real_claude_code import CLAUDE_AGENT_ACP, SCRIPTS, claude_env, need_claude_agent_acp, run_watched
from tests.api.helpers import all_events
from tests.llm.conftest import RunningMock, serve_mock
from tests.permissions.helpers import answer, wait_pending
from tests.servers import RunningServer, ServerProcess, isolated_settings, taskwire_server, wait_for_status

RECORDER = HERE / "wire_recorder.py"
FIXTURES = HERE / "fixtures"


def recorded_claude_code(mock: RunningMock, tmp_path: Path, mode: str, wire: str, **overrides: Any) -> dict[str, Any]:
    """The real adapter and Claude Code, their wire recorded to ``tmp_path/<wire>``."""
    return {
        "kind": "acp", "command": sys.executable,
        "args": [str(RECORDER), str(tmp_path / wire), "node", str(CLAUDE_AGENT_ACP)],
        "env": claude_env(mock, tmp_path / f"home-{wire}"), "session_mode": mode, "startup_timeout": 60, **overrides,
    }


def keep_fixture(tmp_path: Path, wire: str) -> Path:
    path = tmp_path / wire
    if os.environ.get("TASKWIRE_RECORD_FIXTURES") == "1":  # local paths rewritten, as in the shared fixtures
        text = path.read_text().replace(str(tmp_path), "/workspace").replace(str(PROJECT_ROOT), "/project")
        (FIXTURES / f"real_{wire}").write_text(text)
    return path


def declared_subagents(wire: Path) -> bool:
    first = json.loads(wire.read_text().splitlines()[0])["msg"]
    return "subagents" in first["params"].get("clientCapabilities", {})


def announced(wire: Path) -> int:
    return sum('"subagent_update"' in line and '"title"' in line for line in wire.read_text().splitlines())


async def subagents(server: RunningServer, cid: str) -> dict[str, dict[str, Any]]:
    listed = (await server.client.get(f"/api/conversations/{cid}/subagents")).json()
    return {s["description"]: s for s in listed}


async def tree(server: RunningServer, cid: str) -> dict[str, Any]:
    """What a consumer sees of a conversation, ids of taskwire's own records aside: each
    sub-agent (type, description, status, result, its calls and messages), the parent's Agent
    calls and its answer."""
    shown: dict[str, Any] = {"subagents": {}}
    for description, entry in sorted((await subagents(server, cid)).items()):
        events = await all_events(server, entry["subagent_id"])
        for event in events:
            assert_stamped(event, entry["parent_tool_use_id"], entry["subagent_id"])
        calls = last_per_call(events)
        shown["subagents"][description] = {
            "launch": entry["parent_tool_use_id"], "type": entry["subagent_type"], "status": entry["status"],
            "result": entry["result"], "work_state": entry["work_state"],
            "calls": {k: (c["title"], c["status"], c.get("tool_kind"), (c.get("raw_input") or {}).get("command")) for k, c in calls.items()},
            "messages": [(e["role"], e["content"]) for e in events if e["kind"] == "MessageEvent"],
            "started": [(e["subagent_type"], e["description"]) for e in events if e["kind"] == "SubagentStartedEvent"],
        }
    own = await all_events(server, cid)
    calls = last_per_call(own)
    shown["agent_calls"] = {
        # The text the call shows (the flattened form may split one answer into blocks).
        k: (c["title"], c["status"], c.get("tool_kind"), c.get("is_error"), text_of(c.get("content")),
            {key: (c.get("raw_input") or {}).get(key) for key in ("prompt", "description", "subagent_type")})
        for k, c in calls.items() if k in {s["launch"] for s in shown["subagents"].values()}
    }
    shown["main_calls"] = {k: (c["title"], c["status"]) for k, c in calls.items() if k not in shown["agent_calls"]}
    shown["answer"] = [e["content"] for e in own if e["kind"] == "MessageEvent" and e["role"] == "assistant"]
    return shown


async def test_three_parallel_subagents_make_the_same_tree_in_both_forms(forwarding_server: RunningServer, tmp_path: Path) -> None:
    need_claude_agent_acp()
    server = forwarding_server
    trees = {}
    for form in ("auto", "off"):
        async with serve_mock(SCRIPTS / "claude_code_three_subagents.yaml", tmp_path / f"mock-{form}.jsonl") as mock:
            agent = recorded_claude_code(mock, tmp_path, "bypassPermissions", f"three_subagents_{form}.acp.jsonl", subagent_sessions=form)
            cid, frames = await run_watched(server, {"agent": agent, "initial_message": "Three sub-agents, in parallel."})
            assert frames[-1]["value"] == "finished", json.dumps(frames[-6:], indent=1)
            assert mock.script.failures == [] == mock.script.unscripted
        trees[form] = await tree(server, cid)
        wire = keep_fixture(tmp_path, f"three_subagents_{form}.acp.jsonl")
        assert declared_subagents(wire) == (form == "auto")
        assert announced(wire) == (3 if form == "auto" else 0)  # the peer did use child sessions

    native, flattened = trees["auto"], trees["off"]
    assert set(native["subagents"]) == {"Work alpha", "Work beta", "Work gamma"}
    for name, sub in native["subagents"].items():
        assert sub["status"] == "completed" and sub["work_state"] == {"state": "idle", "stop_reason": "end_turn"}
        assert sub["result"].endswith(f"{name.split()[1]} is done")
        # Only what the forms cannot share differs: the reported work state is the same end.
        assert sub == flattened["subagents"][name], json.dumps([sub, flattened["subagents"][name]], indent=1)
    assert native["agent_calls"] == flattened["agent_calls"], json.dumps([native["agent_calls"], flattened["agent_calls"]])
    assert native["main_calls"] == flattened["main_calls"]
    assert native["answer"] == flattened["answer"]


async def test_one_of_three_cancelled_while_the_other_two_finish(forwarding_server: RunningServer, tmp_path: Path) -> None:
    need_claude_agent_acp()
    server = forwarding_server
    async with serve_mock(SCRIPTS / "claude_code_cancel_one.yaml", tmp_path / "mock.jsonl") as mock:
        agent = recorded_claude_code(mock, tmp_path, "bypassPermissions", "cancel_one.acp.jsonl")
        response = await server.client.post("/api/conversations", json={"agent": agent, "initial_message": "Three sub-agents."})
        cid = response.json()["id"]
        await wait_for_event(server, cid, lambda e: e.get("tool_call_id") == "toolu_alpha_0_0")
        alpha = (await subagents(server, cid))["Work alpha"]
        assert alpha["work_state"] == {"state": "running", "cancellable": True}
        cancelled = await server.client.post(f"/api/conversations/{cid}/subagents/{alpha['subagent_id']}/cancel")
        assert cancelled.status_code == 202, cancelled.text
        info = await wait_for_status(server.client, cid, {"finished", "error", "paused"}, timeout=180)
        assert info["status"] == "finished", info
    listed = await subagents(server, cid)
    assert (listed["Work alpha"]["status"], listed["Work alpha"]["work_state"]) == ("cancelled", {"state": "idle", "stop_reason": "cancelled"})
    for name in ("Work beta", "Work gamma"):
        assert (listed[name]["status"], listed[name]["work_state"]) == ("completed", {"state": "idle", "stop_reason": "end_turn"})
    calls = last_per_call(await all_events(server, listed["Work alpha"]["subagent_id"]))
    assert calls["toolu_alpha_0_0"]["status"] in ("failed", "cancelled")
    wire = keep_fixture(tmp_path, "cancel_one.acp.jsonl").read_text()
    assert '"method": "session/cancel"' in wire
    assert (await server.client.delete(f"/api/conversations/{cid}")).status_code == 204


async def test_a_subagent_asking_permission_is_shown_waiting_and_gets_the_answer(forwarding_server: RunningServer, tmp_path: Path) -> None:
    need_claude_agent_acp()
    server = forwarding_server
    async with serve_mock(SCRIPTS / "claude_code_subagent_asks.yaml", tmp_path / "mock.jsonl") as mock:
        agent = recorded_claude_code(mock, tmp_path, "default", "subagent_asks.acp.jsonl", permissions="ask")
        cid = (await server.client.post("/api/conversations", json={"agent": agent, "initial_message": "Ask."})).json()["id"]
        [request] = await wait_pending(server, cid, 1)
        alpha = (await subagents(server, cid))["Work alpha"]
        assert request["subagent_id"] == alpha["subagent_id"]
        assert alpha["work_state"] == {"state": "requires_action", "cancellable": True}
        assert (await answer(server, cid, request["request_id"], option_id="allow-once")).status_code == 200
        info = await wait_for_status(server.client, cid, {"finished", "error", "paused"}, timeout=180)
        assert info["status"] == "finished", info
    alpha = (await subagents(server, cid))["Work alpha"]
    assert (alpha["status"], alpha["work_state"]) == ("completed", {"state": "idle", "stop_reason": "end_turn"})
    states = [e["value"]["state"] for e in await all_events(server, alpha["subagent_id"]) if e.get("key") == "work_state"]
    assert states[:3] == ["running", "requires_action", "running"] and states[-1] == "idle"
    assert last_per_call(await all_events(server, alpha["subagent_id"]))["toolu_alpha_0_0"]["status"] == "completed"
    keep_fixture(tmp_path, "subagent_asks.acp.jsonl")
    assert (await server.client.delete(f"/api/conversations/{cid}")).status_code == 204


async def test_a_background_subagent_is_followed_to_its_end(forwarding_server: RunningServer, tmp_path: Path) -> None:
    need_claude_agent_acp()
    server = forwarding_server
    async with serve_mock(SCRIPTS / "claude_code_background.yaml", tmp_path / "mock.jsonl") as mock:
        agent = recorded_claude_code(mock, tmp_path, "bypassPermissions", "background.acp.jsonl")
        cid = (await server.client.post("/api/conversations", json={"agent": agent, "initial_message": "Background."})).json()["id"]
        info = await wait_for_status(server.client, cid, {"finished", "error", "paused"}, timeout=180)
        assert info["status"] == "finished", info
    alpha = (await subagents(server, cid))["Work alpha"]
    assert (alpha["status"], alpha["work_state"]) == ("completed", {"state": "idle", "stop_reason": "end_turn"})
    assert last_per_call(await all_events(server, alpha["subagent_id"]))["toolu_alpha_0_0"]["status"] == "completed"
    keep_fixture(tmp_path, "background.acp.jsonl")
    assert (await server.client.delete(f"/api/conversations/{cid}")).status_code == 204


async def test_after_a_restart_the_session_is_reopened_without_duplicates(tmp_path: Path) -> None:
    need_claude_agent_acp()
    settings = isolated_settings(tmp_path, forward_subagent_events=True)
    async with serve_mock(SCRIPTS / "claude_code_restart.yaml", tmp_path / "mock.jsonl") as mock:
        agent = recorded_claude_code(mock, tmp_path, "bypassPermissions", "restart.acp.jsonl")
        first = ServerProcess.sharing("first", tmp_path, settings)
        await first.start()
        try:
            cid = (await first.client.post("/api/conversations", json={"agent": agent, "initial_message": "Two sub-agents."})).json()["id"]
            assert (await wait_for_status(first.client, cid, {"finished", "error", "paused"}, timeout=180))["status"] == "finished"
            before = await all_events(first, cid, include_subagents="true")
            tree_before = await subagents(first, cid)
        finally:
            await first.kill()
            await first.client.aclose()

        async with taskwire_server(settings) as server:
            posted = await server.client.post(f"/api/conversations/{cid}/events", json={"content": "And now?"})
            assert posted.status_code in (200, 201, 202), posted.text
            info = await wait_for_status(server.client, cid, {"finished", "error", "paused"}, timeout=180)
            assert info["status"] == "finished", info
            after = await all_events(server, cid, include_subagents="true")
            tree_after = await subagents(server, cid)
        assert mock.script.failures == [] == mock.script.unscripted

    wire = keep_fixture(tmp_path, "restart.acp.jsonl").read_text().splitlines()
    session = next(json.loads(line)["msg"]["result"]["sessionId"] for line in wire if '"modes"' in line and '"result"' in line)
    loads = [json.loads(line)["msg"]["params"] for line in wire if '"method": "session/load"' in line]
    assert [load["sessionId"] for load in loads] == [session]  # the second adapter reopened it
    # The peer had its history: the second message got the third turn of the script.
    answers = [e["content"] for e in after if e["kind"] == "MessageEvent" and e["role"] == "assistant" and "subagent_id" not in e]
    assert answers[-1] == "Second answer: the session was reopened."
    # Nothing the replay carried was stored again: the same sub-agents, each call once.
    assert {k: (v["subagent_id"], v["status"]) for k, v in tree_after.items()} == \
        {k: (v["subagent_id"], v["status"]) for k, v in tree_before.items()}
    # The states the peer reported after the load (each child idle, end_turn) are the current ones.
    assert {v["work_state"]["stop_reason"] for v in tree_after.values()} == {"end_turn"}
    ids = [e["id"] for e in after]
    assert len(ids) == len(set(ids))
    for call in ("toolu_alpha_0_0", "toolu_beta_0_0"):
        assert sum(e.get("tool_call_id") == call for e in after) == sum(e.get("tool_call_id") == call for e in before)
    assert all(e["kind"] != "SubagentStartedEvent" for e in after[len(before):])
