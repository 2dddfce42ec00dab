"""``taskwire watch`` against a real server: the live tree in the terminal, exit on run end."""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import sys
from pathlib import Path


from taskwire_client.terminal import Terminal
from taskwire_client.watch import run_watch
from tests.api.helpers import create, scripted_agent
from tests.conftest import REPO
from tests.servers import isolated_settings, taskwire_server, wait_for_status
from tests.viewer.gates import Gates, gated_subagents_script

NESTED = str(REPO / "config/demo/nested.yaml")
KEY = "watch-key"


def indent_of(lines: list[str], text: str) -> int:
    """Where the line holding ``text`` starts its label (past the tree guides)."""
    line = next(line for line in lines if text in line)
    return line.index(text)


async def watch_in_process(url: str, conversation_id: str, api_key: str | None = None) -> tuple[int, str]:
    out = io.StringIO()
    terminal = Terminal(out)
    args = argparse.Namespace(url=url, conversation_id=conversation_id, api_key=api_key, timeout=120.0)
    code = await run_watch(args, terminal)
    return code, out.getvalue()


async def test_watch_prints_the_tree_of_a_running_demo_and_exits_when_the_run_ends(tmp_path: Path) -> None:
    gates = Gates(tmp_path / "gates")
    settings = isolated_settings(tmp_path, forward_subagent_events=True)
    async with taskwire_server(settings) as server:
        info = await create(server, agent=scripted_agent(gated_subagents_script(gates)), initial_message="Go.")
        watcher = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "taskwire.cli", "watch", info["id"], "--url", server.url, "--timeout", "120",
            cwd=REPO, env={**os.environ, "COLUMNS": "200"},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        gates.open("a", "b")
        stdout, stderr = await asyncio.wait_for(watcher.communicate(), 120)
        await wait_for_status(server.client, info["id"], {"finished"})
        stored = (await server.client.get(f"/api/conversations/{info['id']}/events/count", params={"include_subagents": "true"})).json()
    output = stdout.decode()
    assert watcher.returncode == 0, (output, stderr.decode())
    lines = output.splitlines()
    assert lines[0].startswith(f"conversation {info['id']}  finished")
    assert f"  {stored} events" in lines[0]
    assert lines[-1] == "run ended: finished"
    for name, label in (("a", "task-1"), ("b", "task-2")):
        task_line = indent_of(lines, f"✓ task Echo subagent-{name}")
        card_line = indent_of(lines, f"◆ general-purpose {label} Echo subagent-{name}  completed")
        echo_line = indent_of(lines, f"✓ terminal echo subagent-{name}  → subagent-{name}")
        assert task_line < card_line < echo_line  # each level nested one deeper
    assert indent_of(lines, "✓ finish All sub-agents are back.") == indent_of(lines, "✓ task Echo subagent-a")


async def test_watch_keeps_the_token_total_of_a_live_run_equal_to_rest(tmp_path: Path) -> None:
    gates = Gates(tmp_path / "gates")
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        info = await create(server, agent=scripted_agent(gated_subagents_script(gates)), initial_message="Go.")
        watching = asyncio.create_task(watch_in_process(server.url, info["id"]))
        await wait_for_subagents(server, info["id"], 2)  # the watcher connected while the run went on
        gates.open("a", "b")
        code, output = await watching
        final = (await server.client.get(f"/api/conversations/{info['id']}")).json()
    assert code == 0, output
    usage = final["usage"]
    assert usage["llm_calls"] == 2
    assert f"{usage['input_tokens']} in / {usage['output_tokens']} out tokens" in output.splitlines()[0]


async def wait_for_subagents(server, conversation_id: str, count: int) -> None:  # type: ignore[no-untyped-def]
    for _ in range(1200):
        if len((await server.client.get(f"/api/conversations/{conversation_id}/subagents")).json()) >= count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the sub-agents never started")


async def test_watch_draws_three_levels_and_needs_the_session_key(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, forward_subagent_events=True, session_api_keys=[KEY])
    async with taskwire_server(settings) as server:
        info = await create(server, agent=scripted_agent(NESTED), initial_message="Go.")
        await wait_for_status(server.client, info["id"], {"finished"})
        refused, refusal = await watch_in_process(server.url, info["id"], api_key="wrong")
        code, output = await watch_in_process(server.url, info["id"], api_key=KEY)
    assert refused == 2 and "the server refused" in refusal
    assert code == 0
    lines = output.splitlines()
    levels = [
        indent_of(lines, "You: Go."),
        indent_of(lines, "◆ general-purpose task-1 Delegate a nested job  completed"),
        indent_of(lines, "◆ general-purpose task-1.1 Echo nested-leaf  completed"),
        indent_of(lines, "✓ terminal echo nested-leaf  → nested-leaf"),
    ]
    assert levels == sorted(set(levels))


async def test_watch_of_an_unknown_conversation_says_so_and_exits_2(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        code, output = await watch_in_process(server.url, "no-such-conversation")
    assert code == 2
    assert "conversation 'no-such-conversation' not found" in output


async def test_watch_of_a_run_that_ends_in_error_says_why(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        info = await create(server, agent=scripted_agent("/etc/hostname"), initial_message="Go.")
        await wait_for_status(server.client, info["id"], {"error"})
        code, output = await watch_in_process(server.url, info["id"])
    assert code == 1
    last = output.strip().splitlines()[-1]
    assert last.startswith("run ended: error: script /etc/hostname is outside the config folder"), output
