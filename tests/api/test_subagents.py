"""Sub-agents over REST: the task tool, stamped sub-streams, the tree, cancelling, failures."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from taskwire.llm.mock_server import create_mock_app
from tests.api.helpers import all_events, create, scripted_agent
from tests.servers import RunningServer, isolated_settings, serve_app, taskwire_server, wait_for_status
from tests.services import wait_until

REPO = Path(__file__).resolve().parents[2]
TWO = str(REPO / "config/demo/two_subagents.yaml")


def chain_script(depth: int) -> str:
    """Main delegates to level 1, which delegates to level 2, ... down to ``depth``, which echoes."""
    lanes = []
    for level in range(depth, 0, -1):
        prompt = f"Level {level} work."
        if level == depth:
            first = {"tool_calls": [{"name": "terminal", "arguments": {"command": f"echo level-{level}"}}]}
        else:
            first = {"tool_calls": [{"name": "task", "arguments": {
                "description": f"Level {level + 1}", "prompt": f"Level {level + 1} work.", "subagent_type": "general-purpose"}}]}
        lanes.append({"name": f"level{level}", "match": {"first_user_ends_with": prompt},
                      "turns": [first, {"tool_calls": [{"name": "finish", "arguments": {"message": f"level {level} done"}}]}]})
    lanes.append({"name": "main", "turns": [
        {"tool_calls": [{"name": "task", "arguments": {"description": "Level 1", "prompt": "Level 1 work.", "subagent_type": "general-purpose"}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"message": "all levels done"}}]},
    ]})
    return json.dumps({"lanes": lanes})


def task_calls(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == "ActionEvent" and e["tool_name"] == "task"]


def without_volatile(event: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in event.items() if k not in ("id", "timestamp", "seq")}
    if event.get("key") == "usage":  # when each model call started is a time too
        kept["value"] = {**event["value"], "added": {k: v for k, v in event["value"]["added"].items() if k != "started_at"}}
    return kept


async def run_two_subagents(server: RunningServer) -> dict[str, Any]:
    info = await create(server, agent=scripted_agent(TWO), initial_message="Run the demo.")
    done = await wait_for_status(server.client, info["id"], {"finished", "error"})
    assert done["status"] == "finished", await all_events(server, info["id"], include_subagents=True)
    return done


async def test_parent_stream_holds_only_its_own_events(server: RunningServer) -> None:
    info = await run_two_subagents(server)
    own = await all_events(server, info["id"])
    assert all("subagent_id" not in e and "parent_tool_use_id" not in e for e in own)
    assert [e["tool_name"] for e in task_calls(own)] == ["task", "task"]
    results = [e for e in own if e["kind"] == "ObservationEvent" and e["tool_name"] == "task"]
    assert sorted(r["content"].splitlines()[0] for r in results) == [
        "Sub-agent task-1 (general-purpose) completed.",
        "Sub-agent task-2 (general-purpose) completed.",
    ]
    assert any("subagent-a printed: subagent-a" in r["content"] for r in results)


async def test_subagent_events_are_stored_stamped_in_their_own_streams(server: RunningServer) -> None:
    info = await run_two_subagents(server)
    calls = {e["arguments"]["description"]: e["tool_call_id"] for e in task_calls(await all_events(server, info["id"]))}
    tree = (await server.client.get(f"/api/conversations/{info['id']}/subagents")).json()
    assert {(s["parent_tool_use_id"], s["status"], s["subagent_type"]) for s in tree} == {
        (calls["Echo subagent-a"], "completed", "general-purpose"),
        (calls["Echo subagent-b"], "completed", "general-purpose"),
    }
    for description, call_id in calls.items():
        sub = await all_events(server, info["id"], parent_tool_use_id=call_id)
        entry = next(s for s in tree if s["parent_tool_use_id"] == call_id)
        assert sub and all(e["parent_tool_use_id"] == call_id and e["subagent_id"] == entry["subagent_id"] for e in sub)
        assert sub[0]["kind"] == "SubagentStartedEvent" and sub[0]["description"] == description
        assert sub[-1]["kind"] == "SubagentFinishedEvent" and sub[-1]["status"] == "completed"
        assert entry["event_count"] == len(sub)
        echoed = "subagent-a" if description.endswith("a") else "subagent-b"
        assert any(e["kind"] == "ObservationEvent" and echoed in e["content"] for e in sub)
        by_id = await all_events(server, info["id"], subagent_id=entry["subagent_id"])
        assert [e["id"] for e in by_id] == [e["id"] for e in sub]
    everything = await all_events(server, info["id"], include_subagents=True)
    assert [e["seq"] for e in everything] == sorted({e["seq"] for e in everything})
    count = await server.client.get(
        f"/api/conversations/{info['id']}/events/count", params={"include_subagents": "true", "kind": "ObservationEvent"}
    )
    assert count.json() == sum(e["kind"] == "ObservationEvent" for e in everything)


async def test_depth_three_chain_nests_and_every_level_is_stamped_innermost(server: RunningServer) -> None:
    info = await create(server, agent=scripted_agent(chain_script(3)), initial_message="Go deep.")
    done = await wait_for_status(server.client, info["id"], {"finished", "error"})
    assert done["status"] == "finished"
    tree = (await server.client.get(f"/api/conversations/{info['id']}/subagents")).json()
    assert [s["description"] for s in tree] == ["Level 1", "Level 2", "Level 3"]
    assert tree[0]["parent_subagent_id"] is None
    assert tree[1]["parent_subagent_id"] == tree[0]["subagent_id"]
    assert tree[2]["parent_subagent_id"] == tree[1]["subagent_id"]
    everything = await all_events(server, info["id"], include_subagents=True)
    for entry in tree:
        own = [e for e in everything if e.get("subagent_id") == entry["subagent_id"]]
        assert own and all(e["parent_tool_use_id"] == entry["parent_tool_use_id"] for e in own)
    # The level-2 task call lives in level 1's stream, stamped with level 1's spawning call.
    level2_call = next(e for e in everything if e["kind"] == "ActionEvent" and e["arguments"].get("description") == "Level 3")
    assert level2_call["subagent_id"] == tree[1]["subagent_id"]
    # Everything below the first call: all three sub-agents.
    below = await all_events(server, info["id"], parent_tool_use_id=tree[0]["parent_tool_use_id"])
    assert {e["subagent_id"] for e in below} == {s["subagent_id"] for s in tree}


async def test_unknown_subagent_type_is_an_error_observation_naming_the_known_types(server: RunningServer) -> None:
    script = {"lanes": [{"name": "main", "turns": [
        {"tool_calls": [{"name": "task", "arguments": {"description": "x", "prompt": "y", "subagent_type": "wizard"}}]},
        {"text": "I'll do it myself."},
    ]}]}
    info = await create(server, agent=scripted_agent(json.dumps(script)), initial_message="go")
    done = await wait_for_status(server.client, info["id"], {"finished", "error"})
    assert done["status"] == "finished"
    observation = next(e for e in await all_events(server, info["id"]) if e["kind"] == "ObservationEvent")
    assert observation["is_error"] is True
    assert "wizard" in observation["content"]
    for known in ("general-purpose", "code-explorer", "code-reviewer"):
        assert known in observation["content"]


async def test_failing_subagent_reaches_the_parent_as_an_error_observation(server: RunningServer) -> None:
    script = {"lanes": [
        {"name": "sub", "match": {"first_user_ends_with": "Fail please."}, "turns": [{"error": "sub-agent model is down"}]},
        {"name": "main", "turns": [
            {"tool_calls": [{"name": "task", "arguments": {"description": "doomed", "prompt": "Fail please."}}]},
            {"text": "The sub-agent failed; carrying on."},
        ]},
    ]}
    info = await create(server, agent=scripted_agent(json.dumps(script)), initial_message="go")
    done = await wait_for_status(server.client, info["id"], {"finished", "error"})
    assert done["status"] == "finished"
    events = await all_events(server, info["id"])
    observation = next(e for e in events if e["kind"] == "ObservationEvent")
    assert observation["is_error"] and "failed" in observation["content"] and "sub-agent model is down" in observation["content"]
    assert events[-2]["kind"] == "MessageEvent" and events[-2]["content"] == "The sub-agent failed; carrying on."
    tree = (await server.client.get(f"/api/conversations/{info['id']}/subagents")).json()
    assert tree[0]["status"] == "error"
    sub = await all_events(server, info["id"], subagent_id=tree[0]["subagent_id"])
    assert any(e["kind"] == "AgentErrorEvent" for e in sub)


async def test_cancelling_one_of_two_parallel_subagents_leaves_the_other_running(server: RunningServer) -> None:
    script = {"lanes": [
        {"name": "slow", "match": {"first_user_ends_with": "Be slow."}, "turns": [
            {"tool_calls": [{"name": "terminal", "arguments": {"command": "sleep 20"}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"message": "slow done"}}]}]},
        {"name": "quick", "match": {"first_user_ends_with": "Be quick."}, "turns": [
            {"text": "quick done", "delay": 1}]},
        {"name": "main", "turns": [
            {"tool_calls": [
                {"name": "task", "arguments": {"description": "slow one", "prompt": "Be slow."}},
                {"name": "task", "arguments": {"description": "quick one", "prompt": "Be quick."}}]},
            {"text": "Parent carried on."}]},
    ]}
    info = await create(server, agent=scripted_agent(json.dumps(script)), initial_message="go")
    slow = None
    for _ in range(400):
        tree = (await server.client.get(f"/api/conversations/{info['id']}/subagents")).json()
        slow = next((s for s in tree if s["description"] == "slow one"), None)
        if slow is not None:
            break
        await asyncio.sleep(0.05)
    assert slow is not None
    response = await server.client.post(f"/api/conversations/{info['id']}/subagents/{slow['subagent_id']}/cancel")
    assert response.status_code == 202
    done = await wait_for_status(server.client, info["id"], {"finished", "error"})
    assert done["status"] == "finished"
    tree = {s["description"]: s for s in (await server.client.get(f"/api/conversations/{info['id']}/subagents")).json()}
    assert tree["slow one"]["status"] == "cancelled"
    assert tree["quick one"]["status"] == "completed"
    results = {e["tool_call_id"]: e for e in await all_events(server, info["id"], kind="ObservationEvent")}
    assert "cancelled" in results[tree["slow one"]["parent_tool_use_id"]]["content"]
    assert "quick done" in results[tree["quick one"]["parent_tool_use_id"]]["content"]
    again = await server.client.post(f"/api/conversations/{info['id']}/subagents/{slow['subagent_id']}/cancel")
    assert again.status_code == 400
    unknown = await server.client.post(f"/api/conversations/{info['id']}/subagents/nobody/cancel")
    assert unknown.status_code == 404


async def test_flag_changes_neither_stored_parent_events_nor_llm_requests(tmp_path: Path) -> None:
    """With forwarding off and on: the parent's stored events are the same (ids and times aside)
    and the main agent's LLM request bodies are byte-identical."""
    outcomes = []
    for flag in (False, True):
        folder = tmp_path / f"flag-{flag}"
        folder.mkdir()
        log = folder / "requests.jsonl"
        async with serve_app(create_mock_app(TWO, log_path=log)) as mock_url:
            settings = isolated_settings(folder, forward_subagent_events=flag)
            async with taskwire_server(settings) as server:
                agent = {"kind": "native", "llm": {"api": "anthropic", "model": "m", "base_url": mock_url, "api_key": "k"}}
                info = await create(server, agent=agent, initial_message="Run the demo.")
                done = await wait_for_status(server.client, info["id"], {"finished", "error"})
                assert done["status"] == "finished"
                parent = [without_volatile(e) for e in await all_events(server, info["id"])]
        main_requests = [
            line["body"] for line in map(json.loads, log.read_text().splitlines())
            if _first_user_text(line["body"]) == "Run the demo."
        ]
        outcomes.append((parent, main_requests))
    (parent_off, requests_off), (parent_on, requests_on) = outcomes
    # Parallel sub-agents finish in either order, so their results may be stored in either
    # order: compare the results as a set, everything else in order.
    assert _without_results(parent_off) == _without_results(parent_on)
    assert sorted(map(json.dumps, parent_off)) == sorted(map(json.dumps, parent_on))
    assert len(requests_off) == 3
    assert requests_off == requests_on


def _without_results(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] != "ObservationEvent"]


def _first_user_text(body: Any) -> str:
    data = json.loads(body) if isinstance(body, str) else body
    first = data["messages"][0]["content"]
    return first if isinstance(first, str) else "".join(b.get("text", "") for b in first)


async def test_subagent_types_are_listed_with_their_source(server: RunningServer, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".agents/agents").mkdir(parents=True)
    (project / ".agents/agents/release-notes.md").write_text(
        "---\nname: release-notes\ndescription: Writes release notes.\n---\nWrite release notes.\n"
    )
    (project / ".agents/agents/code-explorer.md").write_text(
        "---\nname: code-explorer\ndescription: The project's own explorer.\n---\nExplore.\n"
    )
    types = {t["name"]: t for t in (await server.client.get("/api/sub-agents", params={"workspace": str(project)})).json()}
    assert types["general-purpose"]["source"] == "builtin"
    assert types["code-reviewer"]["source"] == "plugin:taskwire-review"
    assert types["release-notes"]["source"] == "project"
    assert types["code-explorer"]["source"] == "project"  # the project overrides the built-in
    assert types["claude-code"]["backend"] == "acp"
    plain = {t["name"]: t for t in (await server.client.get("/api/sub-agents")).json()}
    assert plain["code-explorer"]["source"] == "builtin" and "release-notes" not in plain


async def test_an_edited_or_removed_type_file_is_read_again(server: RunningServer, tmp_path: Path) -> None:
    folder = tmp_path / "project/.agents/agents"
    folder.mkdir(parents=True)
    notes = folder / "release-notes.md"
    notes.write_text("---\nname: release-notes\ndescription: Writes release notes.\n---\nWrite them.\n")

    async def listed() -> dict[str, Any]:
        response = await server.client.get("/api/sub-agents", params={"workspace": str(tmp_path / "project")})
        return {t["name"]: t for t in response.json()}

    assert (await listed())["release-notes"]["description"] == "Writes release notes."
    notes.write_text("---\nname: release-notes\ndescription: Writes the changelog instead.\n---\nWrite it.\n")
    assert (await listed())["release-notes"]["description"] == "Writes the changelog instead."
    notes.unlink()
    assert "release-notes" not in await listed()


FOLLOW_UP = json.dumps({"lanes": [
    {"name": "sub", "match": {"first_user_ends_with": "Echo."}, "turns": [
        {"tool_calls": [{"name": "finish", "arguments": {"message": "echoed"}}]}]},
    {"name": "main", "turns": [
        {"tool_calls": [{"name": "task", "arguments": {"description": "first", "prompt": "Echo."}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"message": "first run done"}}]},
        {"tool_calls": [{"name": "task", "arguments": {"description": f"again {n}", "prompt": "Echo."}} for n in (1, 2)]},
        {"tool_calls": [{"name": "finish", "arguments": {"message": "second run done"}}]},
    ]},
]})


async def test_a_follow_up_of_a_reloaded_root_names_its_subagents_after_the_earlier_ones(tmp_path: Path) -> None:
    """A finished root is unloaded; loaded again for a follow-up, it counts the sub-agents it
    spawned before, so the new ones are ``task-2`` and ``task-3``, never a second ``task-1``."""
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        info = await create(server, agent=scripted_agent(FOLLOW_UP), initial_message="go")
        assert (await wait_for_status(server.client, info["id"], {"finished", "error"}))["status"] == "finished"
        await wait_until(lambda: server.runtime.loaded(info["id"]) is None, timeout=30, what="the root unloaded")
        sent = await server.client.post(f"/api/conversations/{info['id']}/events", json={"content": "again"})
        assert sent.status_code < 300, sent.text
        assert (await wait_for_status(server.client, info["id"], {"finished", "error"}))["status"] == "finished"
        events = await all_events(server, info["id"], include_subagents="true")
    started = {e["description"]: e["label"] for e in events if e["kind"] == "SubagentStartedEvent"}
    assert started == {"first": "task-1", "again 1": "task-2", "again 2": "task-3"}
