"""The real agent-server with the plugin: every event of every ``task`` sub-agent (parallel,
nested, of a built-in, a workspace-file and a plugin-provided type) reaches every socket of the
root conversation live, as OpenHands serializes it plus ``parent_tool_use_id`` and
``subagent_id``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import websockets

from tests.openhands_plugin.agent_server import (
    agent_server, everything, frames_until_run_ends, say, socket, stamped, start_conversation, unstamped)
from tests.openhands_plugin.helpers import CRITIC_PLUGIN, INNER_CALL, TREE_CALLS, mock_llm, workspace_with_agents


def persisted(folder: Path) -> dict[str, dict[str, Any]]:
    """Event id -> the event as OpenHands wrote it, for every sub-agent under ``folder``."""
    return {json.loads(f.read_text())["id"]: json.loads(f.read_text()) for f in folder.glob("subagents/**/events/event-*.json")}


async def transient_until(session: Any, ids: set[str]) -> dict[str, dict[str, Any]]:
    """The session socket's transient frames (``/sockets/session/{id}``) until they hold ``ids``."""
    found: dict[str, dict[str, Any]] = {}
    async with asyncio.timeout(60):
        while not ids <= set(found):
            envelope = json.loads(await session.recv())
            if envelope["type"] == "transient":
                found[envelope["event"]["id"]] = envelope["event"]
    return found


def assert_nested_by_the_consumer_rule(frames: list[dict[str, Any]]) -> None:
    """Each stamped frame nests under a ``task`` call the same socket showed before it."""
    calls: set[str] = set()
    for frame in frames:
        if "parent_tool_use_id" in frame:
            assert frame["parent_tool_use_id"] in calls, frame
        if frame["kind"] == "ActionEvent" and frame["tool_name"] == "task":
            calls.add(frame["tool_call_id"])


async def test_subagent_events_reach_every_socket_live_and_stamped(tmp_path: Path) -> None:
    async with mock_llm(tmp_path, "tree") as llm, agent_server(tmp_path / "server") as server:
        workspace = workspace_with_agents(tmp_path / "ws")
        conversation = await start_conversation(server, llm.url, workspace, concurrency=3,
                                                plugins=[{"source": str(CRITIC_PLUGIN)}])
        async with socket(server, conversation) as first, socket(server, conversation) as second, \
                websockets.connect(f"{server.socket_url(conversation).replace('/events/', '/session/')}") as session:
            await say(server, conversation)
            frames, again = await asyncio.gather(frames_until_run_ends(first), frames_until_run_ends(second))
            envelopes = await transient_until(session, {f["id"] for f in stamped(frames)})
        parent = await everything(server, f"/api/conversations/{conversation}/events/search")
    assert frames[-1]["value"] == "finished"

    # Every sub-agent, at depth 1 and 2, under the call that spawned it.
    subagents = {f["parent_tool_use_id"]: f["subagent_id"] for f in stamped(frames)}
    assert set(subagents) == {*TREE_CALLS, INNER_CALL}
    assert len(set(subagents.values())) == 4
    assert all(len({f["subagent_id"] for f in stamped(frames) if f["parent_tool_use_id"] == c}) == 1 for c in subagents)
    assert_nested_by_the_consumer_rule(frames)
    finished = {f["parent_tool_use_id"]: f["observation"]["content"][0]["text"] for f in stamped(frames)
                if f["kind"] == "ObservationEvent" and f["tool_name"] == "finish"}
    assert finished == {"call_main_0_0": "planner done", "call_main_0_1": "beta done",
                        "call_main_0_2": "critic done", INNER_CALL: "inner done"}
    for call in subagents:
        kinds = [f["kind"] for f in stamped(frames) if f["parent_tool_use_id"] == call]
        assert kinds[:2] == ["SystemPromptEvent", "MessageEvent"] and {"ActionEvent", "ObservationEvent"} <= set(kinds)

    # Live: a sub-agent's events arrive before its parent sees the call's result.
    position = {id(f): i for i, f in enumerate(frames)}
    results = {f["tool_call_id"]: position[id(f)] for f in frames if f["kind"] == "ObservationEvent" and f["tool_name"] == "task"}
    for frame in stamped(frames):
        assert position[id(frame)] < results[frame["parent_tool_use_id"]], frame["kind"]

    # Exactly OpenHands' event: the frame less the two stamps is the file OpenHands wrote for it.
    on_disk = persisted(server.conversation_dir(conversation))
    for frame in stamped(frames):
        event = {k: v for k, v in frame.items() if k not in ("parent_tool_use_id", "subagent_id")}
        assert on_disk[frame["id"]] == event
    # The inner sub-agent is persisted under the planner's folder, each folder named by its subagent_id.
    inner = next(server.conversation_dir(conversation).glob(f"subagents/*/subagents/{subagents[INNER_CALL].replace('-', '')}"))
    assert inner.parent.parent.name == subagents["call_main_0_0"].replace("-", "")

    # The root's own frames are its stored events, unstamped; none of the sub-agents' is stored there.
    parent_ids = {e["id"] for e in parent}
    assert {f["id"] for f in unstamped(frames) if f["kind"] != "ConversationStateUpdateEvent"} <= parent_ids
    assert not parent_ids & {f["id"] for f in stamped(frames)}
    # Every socket saw the same stream; the session socket, as events it does not persist.
    assert all(envelopes[f["id"]] == f for f in stamped(frames))
    assert sorted(f["id"] for f in stamped(again)) == sorted(f["id"] for f in stamped(frames))
