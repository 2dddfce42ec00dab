"""Forwarding, end to end: real scripted runs watched over a real WebSocket."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from taskwire_client.events import EVENT_KINDS
from tests.api.helpers import all_events, create, scripted_agent
from tests.api.socket_client import next_frame, open_socket
from tests.api.test_subagents import chain_script
from tests.servers import RunningServer, isolated_settings, taskwire_server
from tests.stream.checks import assert_gapless

REPO = Path(__file__).resolve().parents[2]
TWO = str(REPO / "config/demo/two_subagents.yaml")


def root_ended(frame: dict[str, Any]) -> bool:
    return (
        frame.get("key") == "status"
        and "subagent_id" not in frame
        and frame.get("value") in ("finished", "error")
    )


async def watch_run(server: RunningServer, agent: dict[str, Any], **params: Any) -> tuple[str, list[dict[str, Any]]]:
    """Create a conversation, connect, start it, and read frames until the root's run ends."""
    info = await create(server, agent=agent, initial_message="Go.", run=False)
    frames: list[dict[str, Any]] = []
    async with open_socket(server, info["id"], **params) as ws:
        first = await next_frame(ws)
        assert first["kind"] == "ConversationStateUpdateEvent" and first["key"] == "full_state"
        assert (await server.client.post(f"/api/conversations/{info['id']}/run")).status_code == 200
        while not frames or not root_ended(frames[-1]):
            frames.append(await next_frame(ws))
    return info["id"], frames


def assert_stamped(event: dict[str, Any], *, tool_call_id: str, subagent_id: str) -> None:
    assert event.get("parent_tool_use_id") == tool_call_id, event
    assert event.get("subagent_id") == subagent_id, event


async def test_every_subagent_event_reaches_the_socket_stamped_with_its_task_call(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        cid, frames = await watch_run(server, scripted_agent(TWO))
        stored = await all_events(server, cid, include_subagents=True)
        tree = (await server.client.get(f"/api/conversations/{cid}/subagents")).json()
    assert_gapless(frames, [e["seq"] for e in stored])
    spawned_by = {s["subagent_id"]: s["parent_tool_use_id"] for s in tree}
    task_calls = {e["tool_call_id"] for e in stored if e["kind"] == "ActionEvent" and e["tool_name"] == "task" and "subagent_id" not in e}
    assert set(spawned_by.values()) == task_calls and len(task_calls) == 2
    forwarded = [f for f in frames if "subagent_id" in f]
    assert {f["subagent_id"] for f in forwarded} == set(spawned_by)
    for frame in forwarded:
        assert_stamped(frame, tool_call_id=spawned_by[frame["subagent_id"]], subagent_id=frame["subagent_id"])
    kinds = {f["kind"] for f in forwarded}
    assert {"SubagentStartedEvent", "ActionEvent", "ObservationEvent", "SubagentFinishedEvent"} <= kinds
    # Main-agent events never carry a stamp, and are exactly the root's own stream.
    main = [f for f in frames if "seq" in f and "subagent_id" not in f]
    assert all("parent_tool_use_id" not in f for f in main)
    assert [f["id"] for f in main] == [e["id"] for e in stored if "subagent_id" not in e]


async def test_depth_three_chain_is_forwarded_with_innermost_stamps(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        cid, frames = await watch_run(server, scripted_agent(chain_script(3)))
        tree = (await server.client.get(f"/api/conversations/{cid}/subagents")).json()
    assert len(tree) == 3
    for entry in tree:
        own = [f for f in frames if f.get("subagent_id") == entry["subagent_id"]]
        assert own, entry
        for frame in own:
            assert_stamped(frame, tool_call_id=entry["parent_tool_use_id"], subagent_id=entry["subagent_id"])
    # Each level's task call is itself stamped by the level that made it: the tree rebuilds from the stream.
    calls = {f["tool_call_id"]: f.get("subagent_id") for f in frames if f["kind"] == "ActionEvent" and f["tool_name"] == "task"}
    parents = {s["subagent_id"]: s["parent_subagent_id"] for s in tree}
    for entry in tree:
        assert calls[entry["parent_tool_use_id"]] == parents[entry["subagent_id"]]


async def test_with_forwarding_off_the_socket_sees_the_task_calls_and_nothing_of_the_subagents(server: RunningServer) -> None:
    cid, frames = await watch_run(server, scripted_agent(TWO))
    own = await all_events(server, cid)
    assert [f["seq"] for f in frames if "seq" in f] == [e["seq"] for e in own]
    assert all("subagent_id" not in f and "parent_tool_use_id" not in f for f in frames)
    task_frames = [(f["kind"], f["tool_name"]) for f in frames if f.get("tool_name") == "task"]
    assert task_frames.count(("ActionEvent", "task")) == 2 and task_frames.count(("ObservationEvent", "task")) == 2
    assert not {f["kind"] for f in frames} & {"SubagentStartedEvent", "SubagentFinishedEvent"}
    # The sub-agents still ran and kept their own streams.
    assert len(await all_events(server, cid, include_subagents=True)) > len(own)


SLOW = json.dumps({"lanes": [
    {"name": "a", "match": {"first_user_ends_with": "Part A."}, "turns": [
        {"tool_calls": [{"name": "think", "arguments": {"thought": f"a{i}"}}], "delay": 0.05} for i in range(12)
    ] + [{"tool_calls": [{"name": "finish", "arguments": {"message": "A done"}}]}]},
    {"name": "b", "match": {"first_user_ends_with": "Part B."}, "turns": [
        {"tool_calls": [{"name": "think", "arguments": {"thought": f"b{i}"}}], "delay": 0.05} for i in range(12)
    ] + [{"tool_calls": [{"name": "finish", "arguments": {"message": "B done"}}]}]},
    {"name": "main", "turns": [
        {"tool_calls": [
            {"name": "task", "arguments": {"description": "A", "prompt": "Part A."}},
            {"name": "task", "arguments": {"description": "B", "prompt": "Part B."}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"message": "both done"}}]}]},
]})


async def test_reconnect_mid_delegation_with_after_seq_gets_every_event_once_in_order(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        info = await create(server, agent=scripted_agent(SLOW), initial_message="Go.", run=False)
        before: list[dict[str, Any]] = []
        async with open_socket(server, info["id"]) as ws:
            await next_frame(ws)  # full_state
            await server.client.post(f"/api/conversations/{info['id']}/run")
            while sum("subagent_id" in f for f in before) < 6:
                before.append(await next_frame(ws))
        last = max(f["seq"] for f in before if "seq" in f)
        after: list[dict[str, Any]] = []
        async with open_socket(server, info["id"], resend_mode="since", after_seq=last) as ws:
            state = await next_frame(ws)
            assert state["key"] == "full_state" and state["value"]["subagents"]
            while not after or not root_ended(after[-1]):
                after.append(await next_frame(ws))
        stored = await all_events(server, info["id"], include_subagents=True)
    assert_gapless(before + after, [e["seq"] for e in stored])
    assert all(kind in EVENT_KINDS for kind in {f["kind"] for f in before + after})
