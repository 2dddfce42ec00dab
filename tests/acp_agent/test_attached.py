"""``taskwire acp --url``: the editor's session runs on a real ``taskwire serve``; a server that
dies mid-run and comes back costs the editor no update and repeats none."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from tests.acp_agent.helpers import SCRIPTS, TASKWIRE_ACP, Transcript, by_call, drive, final_status, same_updates, stamp
from tests.servers import ServerProcess, isolated_settings, taskwire_server

SCRIPT = json.dumps({"lanes": [
    {"name": "subb", "match": {"first_user_ends_with": "Echo, then sleep."}, "turns": [
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "echo before the sleep"}}]},
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "sleep 15"}}]},
        {"text": "never reached"}]},
    {"name": "main", "turns": [
        {"text": "First a command.", "tool_calls": [{"name": "terminal", "arguments": {"command": "echo main-agent"}}]},
        {"tool_calls": [{"name": "task", "arguments": {"description": "Sleep in B", "prompt": "Echo, then sleep."}}]},
        {"text": "Picked up after the restart."}]},
]})
SLEEPING = {"sessionUpdate": "tool_call", "rawInput": {"command": "sleep 15"}}


def _matches(value: Any, pattern: Any) -> bool:
    if not isinstance(pattern, dict):
        return value == pattern
    return isinstance(value, dict) and all(_matches(value.get(k), v) for k, v in pattern.items())


async def _restarted_mid_run(tmp_path: Path, *, subagents: bool = False) -> Transcript:
    """The editor's run, its server killed and started again while sub-agent B sleeps."""
    script = tmp_path / "script.json"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    env.update(OH_FORWARD_SUBAGENT_EVENTS="true", OH_LLM_API="scripted", OH_LLM_SCRIPT=str(script),
               OH_CONFIG_FILE=str(tmp_path / "none.toml"),
               # The editor's project folder is the workspace: the server must allow it.
               OH_WORKSPACE_ROOTS=json.dumps([str(tmp_path / "project")]))
    server = ServerProcess("served", tmp_path, env)
    await server.start()
    restarted = False

    async def restart_while_b_sleeps(line: dict[str, Any]) -> None:
        nonlocal restarted
        if line["kind"] == "update" and not restarted and _matches(line["params"]["update"], SLEEPING):
            restarted = True
            await server.kill()  # a crash: no goodbye on the socket, the run dies with the process
            await server.start()

    project = str(tmp_path / "project")
    steps = [
        {"op": "initialize"},
        {"op": "new", "cwd": project},
        {"op": "prompt", "text": "Go."},
        {"op": "prompt", "text": "Continue."},
        {"op": "load", "cwd": project},
    ]
    client_env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    try:
        transcript = await drive(steps, env=client_env, folder=tmp_path, command=[*TASKWIRE_ACP, "--url", server.url],
                                 on_line=restart_while_b_sleeps, subagents=subagents)
    finally:
        await server.stop()
        await server.client.aclose()
    assert restarted
    return transcript


async def test_attached_session_survives_a_server_restart_mid_run(tmp_path: Path) -> None:
    transcript = await _restarted_mid_run(tmp_path)
    # The restart stopped the run (the new process found it running and paused it): cancelled.
    assert transcript.result(2)["stopReason"] == "cancelled"
    assert transcript.result(3)["stopReason"] == "end_turn"
    assert transcript.sdk_errors == []
    # An editor that did not declare clientCapabilities.subagents: the flattened form only.
    assert not {p["update"]["sessionUpdate"] for p in transcript.raw} & {"subagent_update", "session_message"}
    assert len({p["sessionId"] for p in transcript.raw}) == 1

    live = transcript.updates(2) + transcript.updates(3)
    calls = by_call(live)
    for call_id, updates in calls.items():
        assert [u["sessionUpdate"] for u in updates].count("tool_call") == 1, call_id  # nothing twice
        assert updates[0]["sessionUpdate"] == "tool_call"
    statuses = final_status(calls)
    sleeping = next(c for c, u in calls.items() if u[0].get("rawInput") == {"command": "sleep 15"})
    task = next(c for c, u in calls.items() if u[0]["kind"] == "other")
    assert statuses[sleeping] == statuses[task] == "failed"  # closed by the restarted server, honestly
    assert stamp(calls[sleeping][-1])[0] == task
    assert [s for c, s in statuses.items() if c not in (sleeping, task)] == ["completed", "completed"]
    # Nothing lost, nothing repeated: the live session showed exactly what the store replays.
    same_updates(live, transcript.updates(4))


async def test_attached_child_sessions_survive_a_server_restart_mid_run(tmp_path: Path) -> None:
    transcript = await _restarted_mid_run(tmp_path, subagents=True)
    assert transcript.sdk_errors == [] and transcript.validated == transcript.raw
    assert transcript.result(2)["stopReason"] == "cancelled" and transcript.result(3)["stopReason"] == "end_turn"
    live = [u for step in (2, 3) for u in transcript.updates(step) if u["sessionUpdate"] == "subagent_update"]
    announced = [u["sessionId"] for u in live if "title" in u]
    assert len(announced) == 1  # announced once, not again after the feed resumed
    states = [u["state"] for u in live if "state" in u]
    assert states[0] == {"state": "running"} and states[-1]["state"] == "idle", states  # never left running


async def test_attached_mode_uses_the_servers_key_and_refuses_a_wrong_one(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, session_api_keys=["the-key"], forward_subagent_events=True,
                                 llm_script=str(SCRIPTS / "two_and_nested.yaml"))
    client_env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    async with taskwire_server(settings) as server:
        refused = await asyncio.create_subprocess_exec(
            *TASKWIRE_ACP, "--url", server.url, "--key", "wrong", env=client_env,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(refused.communicate(), 60)
        assert refused.returncode == 2 and out == b""
        assert b"cannot use the taskwire server" in err and b"session API key" in err
        project = str(tmp_path / "project")
        steps = [{"op": "initialize"}, {"op": "new", "cwd": project}, {"op": "prompt", "text": "Run the demo."}]
        transcript = await drive(steps, env=client_env, folder=tmp_path,
                                 command=[*TASKWIRE_ACP, "--url", server.url, "--key", "the-key"])
    assert transcript.result(2)["stopReason"] == "end_turn"
    stamped = {stamp(u)[0] for u in transcript.updates(2)} - {None}
    assert stamped == {"call_main_1_0", "call_main_1_1", "call_suba_0_0"}  # the server forwards: sub-agents nest
