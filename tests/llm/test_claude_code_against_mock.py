"""The REAL Claude Code CLI against ``mock-llm``: the Claude Code demo scripts play to the end.

Claude Code comes from ``peers/node_modules`` (``npm ci`` in ``peers/``); without it these
tests skip, except in CI, where they fail.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from tests.services import need
from tests.llm.conftest import DEMO, REPO, RunningMock, serve_mock
from tests.peers import offline_claude_env


def claude_binary() -> Path | None:
    """The Claude Code CLI that ``@agentclientprotocol/claude-agent-acp`` brings, if installed."""
    for candidate in sorted((REPO / "peers" / "node_modules" / "@anthropic-ai").glob("claude-agent-sdk-*/claude")):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


async def run_claude(mock: RunningMock, prompt: str, tmp_path: Path) -> list[dict[str, Any]]:
    """``claude -p PROMPT`` (stream-json, permissions bypassed) against ``mock``; its output lines."""
    binary = claude_binary()
    need(binary is not None, "Claude Code is not installed (run `npm ci` in peers/)")
    work = tmp_path / "work"
    work.mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **offline_claude_env(mock.url, tmp_path / "home")}
    process = await asyncio.create_subprocess_exec(
        str(binary), "-p", prompt, "--output-format", "stream-json", "--verbose",
        "--permission-mode", "bypassPermissions",
        cwd=work, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=240)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode == 0, f"claude exited {process.returncode}: {stderr.decode()[-2000:]}"
    return [json.loads(line) for line in stdout.decode().splitlines() if line.strip()]


def tool_results(lines: list[dict[str, Any]]) -> dict[str, tuple[str | None, Any]]:
    """``tool_use_id`` -> (the ``parent_tool_use_id`` of the message holding it, its content)."""
    results = {}
    for line in lines:
        if line.get("type") != "user":
            continue
        for block in line["message"]["content"]:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                results[block["tool_use_id"]] = (line.get("parent_tool_use_id"), block["content"])
    return results


def assert_played_to_the_end(mock: RunningMock) -> None:
    assert mock.script.failures == [] == mock.script.unscripted
    assert all(entry["path"] == "/v1/messages" for entry in mock.requests())


async def test_claude_code_runs_two_parallel_subagents_from_the_script(tmp_path: Path) -> None:
    async with serve_mock(DEMO / "claude_code_two_subagents.yaml", tmp_path / "requests.jsonl") as mock:
        lines = await run_claude(mock, "Run the two sub-agent demo.", tmp_path)
        assert_played_to_the_end(mock)
        assert mock.script.unused_steps() == []
        served = {(entry["lane"], entry["turn"]) for entry in mock.requests()}

    results = tool_results(lines)
    assert results["toolu_main_0_0"] == (None, "main-agent")
    # Each sub-agent's Bash result is attributed to the Agent call that spawned it.
    assert results["toolu_subagent-a_0_0"] == ("toolu_main_1_0", "subagent-a")
    assert results["toolu_subagent-b_0_0"] == ("toolu_main_1_1", "subagent-b")
    hand_back_a = json.dumps(results["toolu_main_1_0"][1])
    assert "subagent-a printed: subagent-a" in hand_back_a
    final = lines[-1]
    assert (final["type"], final["subtype"], final["is_error"]) == ("result", "success", False)
    assert final["result"] == "All done: main-agent, subagent-a and subagent-b were echoed."
    assert {("main", 0), ("main", 1), ("main", 2), ("subagent-a", 0), ("subagent-a", 1),
            ("subagent-b", 0), ("subagent-b", 1)} <= served


async def test_claude_code_lane_matches_a_prompt_a_native_task_would_pass(tmp_path: Path) -> None:
    prompt = "Use one of your own sub-agents to run `echo nested-leaf`, then report its answer."
    async with serve_mock(DEMO / "claude_code_nested.yaml", tmp_path / "requests.jsonl") as mock:
        lines = await run_claude(mock, prompt, tmp_path)
        assert_played_to_the_end(mock)
        # Only the native lanes are left for the native agent that would sit above.
        assert mock.script.unused_steps() == [("main", 0), ("main", 1)]

    results = tool_results(lines)
    assert results["toolu_claude-sub_0_0"] == ("toolu_claude-main_0_0", "nested-leaf")
    assert lines[-1]["result"] == "My sub-agent ran it: nested-leaf printed: nested-leaf"
