"""Clients of the agent-server with forwarding on: OpenHands' own ``RemoteConversation`` still
runs to its end with the parent's events in its list; Python users get the stamped events typed
from ``taskwire_openhands.receiver``, the same as a raw socket shows."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.openhands_plugin.agent_server import (
    agent_server, everything, frames_until_run_ends, say, socket, stamped, start_conversation)
from tests.openhands_plugin.helpers import RUN_TIMEOUT, SCRIPTS, mock_llm, openhands_env, workspace_with_agents
from tests.services import need_openhands

PARALLEL_CALLS = {"call_main_0_0", "call_main_0_1", "call_main_0_2"}
STAMPS = ("parent_tool_use_id", "subagent_id")


async def run_script(tmp_path: Path, script: str, *args: str) -> asyncio.subprocess.Process:
    """``scripts/<script>`` in the OpenHands venv, started."""
    return await asyncio.create_subprocess_exec(
        need_openhands(), str(SCRIPTS / script), *args, env=openhands_env(tmp_path / "client-home", LOG_JSON="true"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def finished(process: asyncio.subprocess.Process) -> str:
    """Its stderr, once it exited 0."""
    _, stderr = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT)
    assert process.returncode == 0, stderr.decode()[-4000:]
    return stderr.decode()


async def test_remote_conversation_runs_to_its_end_with_the_parents_events(tmp_path: Path) -> None:
    workspace = workspace_with_agents(tmp_path / "ws")
    out = tmp_path / "remote.json"
    async with mock_llm(tmp_path, "parallel") as llm, agent_server(tmp_path / "server") as server:
        process = await run_script(tmp_path, "remote_run.py", server.url, llm.url, str(workspace), str(out))
        logged = await finished(process)
        result = json.loads(out.read_text())
        conversation = result["conversation_id"]
        parent = await everything(server, f"/api/conversations/{conversation}/events/search")
        forwarded = await everything(server, f"/api/conversations/{conversation}/subagent_events/search")
    assert result["status"] == "finished"
    assert result["stamped"] == 0
    # It cannot read a stamped frame (its event model forbids unknown fields): it logs and drops each.
    assert logged.count('"message": "ws_event_processing_error"') == len(forwarded)
    # Its list: the parent's stored events (with the state updates it was sent live), no sub-agent's.
    def events(items: list[dict[str, Any]]) -> list[str]:
        return [e["id"] for e in items if e["kind"] != "ConversationStateUpdateEvent"]

    # (in the order its socket delivered them: the server publishes each event in a task of its
    # own, so a batch's observations may arrive in any order, with or without the plugin)
    assert sorted(events(result["events"])) == sorted(events(parent))
    assert not {e["id"] for e in result["events"]} & {e["id"] for e in forwarded}
    assert {e["parent_tool_use_id"] for e in forwarded} == PARALLEL_CALLS  # forwarding was on all along


async def test_the_typed_receiver_yields_each_event_with_its_stamp(tmp_path: Path) -> None:
    out = tmp_path / "received.jsonl"
    async with mock_llm(tmp_path, "parallel") as llm, agent_server(tmp_path / "server") as server:
        conversation = await start_conversation(server, llm.url, workspace_with_agents(tmp_path / "ws"), concurrency=3)
        process = await run_script(tmp_path, "receive.py", server.url, conversation, str(out))
        assert process.stdout is not None
        assert (await asyncio.wait_for(process.stdout.readline(), RUN_TIMEOUT)).strip() == b"ready"
        async with socket(server, conversation) as ws:
            await say(server, conversation)
            frames = await frames_until_run_ends(ws)
        await finished(process)
    received: list[dict[str, Any]] = [json.loads(line) for line in out.read_text().splitlines()][1:]  # after full_state
    assert received[-1]["event"]["kind"] == "ConversationStateUpdateEvent"

    # The same stream as the raw socket: each frame's stamps apart, the rest an OpenHands event.
    def as_frame(item: dict[str, Any]) -> dict[str, Any]:
        stamps = {k: item[k] for k in STAMPS if item[k] is not None}
        return {**item["event"], **stamps}

    def comparable(frame: dict[str, Any]) -> bool:  # the stats updates carry timings of their own
        return frame.get("key") != "stats"

    assert [as_frame(i) for i in received if comparable(i["event"])] == [f for f in frames if comparable(f)]
    sub = [i for i in received if i["parent_tool_use_id"] is not None]
    assert {i["parent_tool_use_id"] for i in sub} == PARALLEL_CALLS == {f["parent_tool_use_id"] for f in stamped(frames)}
    assert all(i["subagent_id"] for i in sub)
    classes = {i["class"] for i in sub}
    assert {"openhands.sdk.event.llm_convertible.action.ActionEvent",
            "openhands.sdk.event.llm_convertible.observation.ObservationEvent",
            "openhands.sdk.event.llm_convertible.message.MessageEvent"} <= classes
    assert not [i for i in received if i["parent_tool_use_id"] is None and i["subagent_id"] is not None]
