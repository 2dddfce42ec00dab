"""The REAL Claude Code through ``@agentclientprotocol/claude-agent-acp``, against ``mock-llm``
(Anthropic dialect), offline, through the real server and a real ``websockets`` client.

Needs ``peers/node_modules`` (``npm ci`` in ``peers/``) and ``node``: without them these tests
skip, except in CI, where they fail.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from taskwire.runtime.agent_types import PROJECT_ROOT
from tests.acp.helpers import assert_stamped, assert_unstamped, last_per_call, wait_for_event
from tests.api.helpers import all_events
from tests.api.socket_client import next_frame, open_socket
from tests.claude_sdk.real_claude import claude_agent
from tests.services import need, wait_until
from tests.llm.conftest import DEMO, RunningMock, serve_mock
from tests.servers import RunningServer

CLAUDE_AGENT_ACP = PROJECT_ROOT / "peers" / "node_modules" / "@agentclientprotocol" / "claude-agent-acp" / "dist" / "index.js"
SCRIPTS = Path(__file__).resolve().parent / "scripts"
TASK_CALL = "call_ask_claude_1"
"""The native agent's ``task`` call in ``native_delegates_to_claude_code.yaml``."""


def need_claude_agent_acp() -> None:
    need(CLAUDE_AGENT_ACP.is_file(), "claude-agent-acp is not installed (run `npm ci` in peers/)")
    need(shutil.which("node") is not None, "node is not on PATH")


def claude_env(mock: RunningMock, home: Path) -> dict[str, str]:
    """Claude Code's environment: only ``mock`` to talk to, its own ``HOME``, no telemetry."""
    return claude_agent(mock, home)["env"]  # type: ignore[arg-type]


def claude_code_acp(mock: RunningMock, home: Path, session_mode: str) -> dict[str, Any]:
    """An ``acp`` agent: the real claude-agent-acp and Claude Code, talking to ``mock`` only."""
    return {
        "kind": "acp", "command": "node", "args": [str(CLAUDE_AGENT_ACP)],
        "env": claude_env(mock, home), "session_mode": session_mode,
    }


async def watch_until_done(ws: Any) -> list[dict[str, Any]]:
    """Socket frames until the root conversation's run ends (``finished`` or ``error``)."""
    frames = []
    while True:
        frame = await next_frame(ws)
        frames.append(frame)
        ended = frame.get("key") == "status" and frame.get("value") in ("finished", "error")
        if frame["kind"] == "ConversationStateUpdateEvent" and ended and "subagent_id" not in frame:
            return frames


async def run_watched(server: RunningServer, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """Create a conversation, open its socket, then run it; the frames until its run ends."""
    response = await server.client.post("/api/conversations", json={**body, "run": False})
    assert response.status_code == 201, response.text
    conversation_id = response.json()["id"]
    async with open_socket(server, conversation_id, max_queue=1024) as ws:
        first = await next_frame(ws)
        assert first["key"] == "full_state"
        assert (await server.client.post(f"/api/conversations/{conversation_id}/run")).status_code == 200
        frames = await asyncio.wait_for(watch_until_done(ws), 240)
    return conversation_id, frames


async def all_gone(home: Path) -> None:
    """Every process with ``HOME=<home>`` has exited. Their group is killed before the call that
    ends them answers; a process may take a moment to finish dying on a loaded machine."""
    await wait_until(lambda: processes_with_home(home) == [], timeout=30, what=f"the processes with HOME={home} to exit")


def processes_with_home(home: Path) -> list[int]:
    """Processes whose environment holds ``HOME=<home>``: the adapter and Claude Code it ran."""
    marker = f"HOME={home}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


async def test_subagent_calls_reach_the_socket_stamped_with_their_agent_calls(
    forwarding_server: RunningServer, tmp_path: Path
) -> None:
    need_claude_agent_acp()
    server = forwarding_server
    async with serve_mock(DEMO / "claude_code_two_subagents.yaml", tmp_path / "mock.jsonl") as mock:
        agent = claude_code_acp(mock, tmp_path / "home", "default")
        body = {"agent": agent, "initial_message": "Run echo main-agent, then two sub-agents in parallel."}
        conversation_id, frames = await run_watched(server, body)
        assert frames[-1]["value"] == "finished", json.dumps(frames[-6:], indent=1)
        assert mock.script.unused_steps() == [] and mock.script.failures == [] == mock.script.unscripted

    calls = last_per_call(frames)
    assert set(calls) == {"toolu_main_0_0", "toolu_main_1_0", "toolu_main_1_1", "toolu_subagent-a_0_0", "toolu_subagent-b_0_0"}
    for call_id in ("toolu_main_0_0", "toolu_main_1_0", "toolu_main_1_1"):
        assert_unstamped(calls[call_id])
    started = {f["parent_tool_use_id"]: f["subagent_id"] for f in frames if f["kind"] == "SubagentStartedEvent"}
    assert set(started) == {"toolu_main_1_0", "toolu_main_1_1"}
    # Every event of a sub-agent's call, not only its last, names the Agent call that spawned it.
    for call_id, agent_call in (("toolu_subagent-a_0_0", "toolu_main_1_0"), ("toolu_subagent-b_0_0", "toolu_main_1_1")):
        for frame in (f for f in frames if f.get("tool_call_id") == call_id):
            assert_stamped(frame, agent_call, started[agent_call])
        assert calls[call_id]["status"] == "completed"
        assert calls[call_id]["raw_input"]["command"].startswith("echo subagent-")
    # The sub-agents' text stayed in their own streams; the main message holds only the main agent's.
    sub_text = {f["parent_tool_use_id"]: f["content"] for f in frames if f["kind"] == "MessageEvent" and f.get("subagent_id") and f["role"] == "assistant"}
    assert sub_text == {"toolu_main_1_0": "subagent-a printed: subagent-a", "toolu_main_1_1": "subagent-b printed: subagent-b"}
    (answer,) = [f for f in frames if f["kind"] == "MessageEvent" and f["role"] == "assistant" and "subagent_id" not in f]
    assert answer["content"].endswith("All done: main-agent, subagent-a and subagent-b were echoed.")
    assert "subagent-a printed" not in answer["content"]

    # The stored record agrees with what went live, and the parent's stream holds none of it.
    for event in await all_events(server, conversation_id):
        assert_unstamped(event)
    tree = (await server.client.get(f"/api/conversations/{conversation_id}/subagents")).json()
    assert sorted((e["parent_tool_use_id"], e["status"]) for e in tree) == [("toolu_main_1_0", "completed"), ("toolu_main_1_1", "completed")]
    assert (await server.client.get(f"/api/conversations/{conversation_id}")).json()["usage"]["input_tokens"] > 0

    # Deleting the conversation ends the adapter and the Claude Code it started.
    assert processes_with_home(tmp_path / "home")
    assert (await server.client.delete(f"/api/conversations/{conversation_id}")).status_code == 204
    await all_gone(tmp_path / "home")


async def test_native_task_to_claude_code_nests_three_levels(
    forwarding_server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_claude_agent_acp()
    server = forwarding_server
    async with serve_mock(SCRIPTS / "claude_code_nested.yaml", tmp_path / "mock.jsonl") as mock:
        # The built-in `claude-code` type runs as shipped; its env comes from the server's.
        for name, value in claude_env(mock, tmp_path / "home").items():
            monkeypatch.setenv(name, value)
        body = {
            "agent": {"kind": "native", "llm": {"api": "scripted", "script": (SCRIPTS / "native_delegates_to_claude_code.yaml").read_text()}},
            "initial_message": "Delegate to Claude Code.",
        }
        conversation_id, frames = await run_watched(server, body)
        assert frames[-1]["value"] == "finished", json.dumps(frames[-6:], indent=1)
        assert mock.script.unused_steps() == [] and mock.script.failures == [] == mock.script.unscripted

    tree = {e["parent_tool_use_id"]: e for e in (await server.client.get(f"/api/conversations/{conversation_id}/subagents")).json()}
    claude = tree[TASK_CALL]
    claude_sub = tree["toolu_claude-main_1_0"]
    assert (claude["subagent_type"], claude["status"]) == ("claude-code", "completed")
    assert (claude_sub["parent_subagent_id"], claude_sub["status"]) == (claude["subagent_id"], "completed")

    (task_call,) = [f for f in frames if f["kind"] == "ActionEvent" and f["tool_call_id"] == TASK_CALL]
    assert_unstamped(task_call)
    calls = last_per_call(frames)
    # Level 2: Claude Code's own calls, its Agent call too, carry the native task call's id.
    assert_stamped(calls["toolu_claude-main_0_0"], TASK_CALL, claude["subagent_id"])
    assert_stamped(calls["toolu_claude-main_1_0"], TASK_CALL, claude["subagent_id"])
    # Level 3: its sub-agent's call keeps its innermost parent, the Agent call.
    assert_stamped(calls["toolu_claude-sub_0_0"], "toolu_claude-main_1_0", claude_sub["subagent_id"])
    assert calls["toolu_claude-sub_0_0"]["status"] == "completed"

    own = await all_events(server, conversation_id)
    observation = next(e for e in own if e["kind"] == "ObservationEvent" and e["tool_call_id"] == TASK_CALL)
    assert observation["content"].endswith("Claude Code is done: from-claude and from-claude-sub.")
    # The claude-code sub-agent ended, and its adapter with it.
    await all_gone(tmp_path / "home")


async def test_interrupt_closes_claude_codes_calls_with_their_parents(forwarding_server: RunningServer, tmp_path: Path) -> None:
    need_claude_agent_acp()
    server = forwarding_server
    async with serve_mock(SCRIPTS / "claude_code_sleeper.yaml", tmp_path / "mock.jsonl") as mock:
        agent = claude_code_acp(mock, tmp_path / "home", "bypassPermissions")
        response = await server.client.post("/api/conversations", json={"agent": agent, "initial_message": "Sleep in a sub-agent."})
        conversation_id = response.json()["id"]
        await wait_for_event(server, conversation_id, lambda e: e.get("tool_call_id") == "toolu_sleeper_0_0")
        assert (await server.client.post(f"/api/conversations/{conversation_id}/interrupt")).status_code == 200
        info = (await server.client.get(f"/api/conversations/{conversation_id}")).json()
        assert info["status"] == "paused"

    calls = last_per_call(await all_events(server, conversation_id, include_subagents="true"))
    assert calls["toolu_sleeper_0_0"]["status"] in ("failed", "cancelled")
    assert_stamped(calls["toolu_sleeper_0_0"], "toolu_main_0_0")
    assert calls["toolu_main_0_0"]["status"] in ("failed", "cancelled")
    assert_unstamped(calls["toolu_main_0_0"])
    (entry,) = (await server.client.get(f"/api/conversations/{conversation_id}/subagents")).json()
    assert (entry["parent_tool_use_id"], entry["status"]) == ("toolu_main_0_0", "cancelled")
    # The session is kept for the next message; deleting the conversation ends it, sleeper included.
    assert (await server.client.delete(f"/api/conversations/{conversation_id}")).status_code == 204
    await all_gone(tmp_path / "home")
