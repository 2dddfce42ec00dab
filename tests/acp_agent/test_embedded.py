"""``taskwire acp`` (embedded) driven by the official ACP SDK's client: a run with two parallel
sub-agents, one nesting a third, then ``session/load`` of the finished session."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from taskwire.acp.mapping import SessionMapper, StartSubagent
from tests.acp_agent.helpers import SCRIPTS, Transcript, by_call, drive, embedded_env, final_status, same_updates, stamp, texts
from tests.servers import isolated_settings, taskwire_server

SCRIPT = SCRIPTS / "two_and_nested.yaml"
PROMPT = "Run the demo."
NEW, PROMPTED, LOADED, LISTED = 1, 2, 3, 4


@dataclass
class Run:
    transcript: Transcript
    session_id: str
    tree: list[dict[str, Any]]
    """The server's ``GET /subagents`` of the session's conversation, read from the same store."""
    project: Path


async def _run(folder: Path) -> Run:
    project = folder / "project"
    steps = [
        {"op": "initialize"},
        {"op": "new", "cwd": str(project)},
        {"op": "prompt", "text": PROMPT},
        {"op": "load", "cwd": str(project)},
        {"op": "list", "cwd": str(project)},
    ]
    transcript = await drive(steps, env=embedded_env(folder, SCRIPT), folder=folder)
    session_id = transcript.result(NEW)["sessionId"]
    # The same store, served: what the REST API says of the tree the editor was shown.
    settings = isolated_settings(folder, workspace_path=folder / "store", database_url=f"sqlite:///{folder / 'store' / 'taskwire.db'}")
    async with taskwire_server(settings) as server:
        tree = (await server.client.get(f"/api/conversations/{session_id}/subagents")).json()
    return Run(transcript, session_id, tree, project)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return asyncio.run(_run(tmp_path_factory.mktemp("acp-embedded")))


def test_every_update_validates_in_the_sdk_unchanged(run: Run) -> None:
    assert run.transcript.sdk_errors == []
    assert run.transcript.validated == run.transcript.raw  # nothing dropped or rewritten by the SDK's schema
    assert all(u["sessionId"] == run.session_id for u in run.transcript.validated)


def test_an_editor_without_the_subagents_capability_gets_no_child_session_frames(run: Run) -> None:
    kinds = {params["update"]["sessionUpdate"] for params in run.transcript.raw}
    assert not kinds & {"subagent_update", "session_message", "session_message_chunk"}
    assert {params["sessionId"] for params in run.transcript.raw} == {run.session_id}


def test_the_prompt_ends_end_turn_with_the_turns_usage(run: Run) -> None:
    answer = run.transcript.result(PROMPTED)
    assert answer["stopReason"] == "end_turn"
    assert answer["usage"]["inputTokens"] > 0 and answer["usage"]["outputTokens"] > 0


def test_subagent_updates_carry_their_spawning_call_and_main_agent_updates_none(run: Run) -> None:
    spawned_by = {entry["subagent_id"]: entry["parent_tool_use_id"] for entry in run.tree}
    assert len(spawned_by) == 3
    seen = set()
    for update in run.transcript.updates(PROMPTED):
        parent, subagent = stamp(update)
        if subagent is None:
            assert parent is None, update  # a main-agent update carries no stamp at all
        else:
            assert parent == spawned_by[subagent], update
            seen.add(subagent)
    assert seen == set(spawned_by)  # every sub-agent was shown
    main_calls = {u["toolCallId"] for u in run.transcript.updates(PROMPTED) if u["sessionUpdate"] == "tool_call" and stamp(u) == (None, None)}
    assert main_calls == {"call_main_0_0", "call_main_1_0", "call_main_1_1"}


def test_sub_agent_text_is_sent_stamped_never_as_the_main_agents(run: Run) -> None:
    by_stream = texts(run.transcript.updates(PROMPTED))
    main = by_stream[(None, None)]
    assert main == "First I'll run the command myself.Now two sub-agents, in parallel.Done: main-agent, leaf and subagent-b were all echoed."
    assert "leaf printed" not in main and "subagent-b printed" not in main
    by_call_id = {parent: text for (parent, _), text in by_stream.items() if parent}
    assert by_call_id == {
        "call_main_1_0": "I'll delegate.My sub-agent says: leaf printed: leaf",
        "call_main_1_1": "subagent-b printed: subagent-b",
        "call_suba_0_0": "Running it.leaf printed: leaf",
    }


def test_task_calls_are_agent_calls_and_nest_by_the_innermost_stamp(run: Run) -> None:
    calls = by_call(run.transcript.updates(PROMPTED))
    task = calls["call_suba_0_0"][0]  # the depth-2 task call, made by sub-agent A
    assert (task["sessionUpdate"], task["kind"], task["title"]) == ("tool_call", "other", "Echo leaf")
    assert task["_meta"]["claudeCode"]["toolName"] == "Agent"
    assert task["rawInput"]["prompt"] == "Run `echo leaf` and report what it printed."
    # leaf's call -> A's task call -> the main agent's task call -> the main agent
    leaf = calls["call_leaf_0_0"][0]
    assert stamp(leaf)[0] == "call_suba_0_0"
    assert stamp(task)[0] == "call_main_1_0"
    assert stamp(calls["call_main_1_0"][0]) == (None, None)
    for call_id, updates in calls.items():
        assert [u["sessionUpdate"] for u in updates] == ["tool_call", "tool_call_update", "tool_call_update"]
        assert [u["status"] for u in updates] == ["pending", "in_progress", "completed"], call_id
        assert len({stamp(u) for u in updates}) == 1  # every update of a call carries its stamp
    terminal = calls["call_main_0_0"]
    assert (terminal[0]["kind"], terminal[0]["title"]) == ("execute", "echo main-agent")
    assert terminal[-1]["rawOutput"] == {"content": "exit code: 0\nmain-agent\n", "isError": False}
    assert terminal[-1]["content"] == [{"type": "content", "content": {"type": "text", "text": "exit code: 0\nmain-agent\n"}}]


def test_load_replays_the_same_updates(run: Run) -> None:
    assert run.transcript.result(LOADED) == {}
    replay = run.transcript.updates(LOADED)
    assert replay[0] == {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": PROMPT}}
    same_updates(run.transcript.updates(PROMPTED), replay[1:])
    assert final_status(by_call(replay)) == dict.fromkeys(by_call(replay), "completed")


def test_the_client_side_mapping_rebuilds_the_servers_subagent_tree(run: Run) -> None:
    """What claude-agent-acp's readers (and taskwire's own ACP client) make of the updates."""
    mapper = SessionMapper()
    started = [a for u in run.transcript.updates(PROMPTED) for a in mapper.receive_update(u) if isinstance(a, StartSubagent)]
    rebuilt = {(a.tool_call_id, a.lane, a.subagent_type, a.description) for a in started}
    by_id = {entry["subagent_id"]: entry for entry in run.tree}
    served = {
        (e["parent_tool_use_id"], by_id[e["parent_subagent_id"]]["parent_tool_use_id"] if e["parent_subagent_id"] else None,
         e["subagent_type"], e["description"])
        for e in run.tree
    }
    assert rebuilt == served
    assert len(started) == 3


def test_list_names_the_session_under_its_workspace(run: Run) -> None:
    sessions = run.transcript.result(LISTED)["sessions"]
    assert [(s["sessionId"], s["cwd"]) for s in sessions] == [(run.session_id, str(run.project))]
