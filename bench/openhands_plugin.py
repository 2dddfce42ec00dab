"""The agent-server plugin (``taskwire-openhands``) beside the agent-server without it, same run.

    .venv/bin/python bench/openhands_plugin.py [--subagents 4] [--steps 20] [--rounds 3]

The real ``openhands-agent-server`` 1.58.2 from ``.venv-openhands`` (``make openhands``), three
ways, in interleaved rounds: ``without`` the plugin, the plugin loaded with forwarding ``off``,
and ``on``. Each round starts each server afresh and runs one tree on it: the main agent sends
``--subagents`` ``task`` calls in one response (``tool_concurrency_limit`` as many), each
sub-agent makes ``--steps`` ``think`` calls then ``finish``, all answered by ``mock-llm`` (in this
process, OpenAI dialect), one raw socket on the root.

Per run: the wall time of the tree (the message posted → the root's ``finished`` frame), the
agent-server's CPU over the same span (its process, every thread, from ``/proc``) and its peak
RSS; OpenHands' own spawn time (the ``task`` ActionEvent → its sub-agent's first event, both
timestamps from what OpenHands persisted, so the same measure with or without the plugin);
with forwarding on, the ``task`` call's frame → its first forwarded frame on the socket; and
emit → frame (an event's own timestamp → its arrival on the socket) for forwarded frames and
for the server's own parent events in the same run. Medians over the rounds; the load average
beside each.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import openhands_tree
from common import ROOT
from peers.servers import cpu_seconds, memory_mb
from rich.console import Console
from rich.table import Table

from taskwire.llm.mock_server import create_mock_app
from tests.openhands_plugin.agent_server import (
    agent_server, run_ended, say, socket, start_conversation)
from tests.servers import serve_app

OPENHANDS_PYTHON = ROOT / ".venv-openhands/bin/python"
MODES = {"without": {"plugin": False, "forward": None}, "off": {"forward": "false"}, "on": {"forward": "true"}}


def script(subagents: int, steps: int) -> dict[str, Any]:
    """``openhands_tree.py``'s tree, and an answer for the title the agent-server asks for."""
    tree = openhands_tree.script(subagents, steps)
    title = {"name": "title", "match": {"first_user_contains": "Generate a title"}, "repeat": True, "optional": True,
             "turns": [{"text": "A tree"}]}
    return {**tree, "lanes": [title, *tree["lanes"]]}


def moment(timestamp: str) -> float:
    """An OpenHands timestamp (naive, server-local ISO) as epoch seconds (same machine)."""
    return datetime.fromisoformat(timestamp).timestamp()


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * q))] if values else float("nan")


def spawn_times(conversation_dir: Path) -> list[float]:
    """OpenHands' own: each ``task`` ActionEvent → its sub-agent's first event, ms."""
    actions = {}
    for path in (conversation_dir / "events").glob("event-*.json"):
        event = json.loads(path.read_text())
        if event.get("kind") == "ActionEvent" and event.get("tool_name") == "task":
            actions[event["action"]["prompt"]] = moment(event["timestamp"])
    spawned = []
    for folder in (conversation_dir / "subagents").iterdir():
        events = sorted((json.loads(p.read_text()) for p in (folder / "events").glob("event-*.json")), key=lambda e: e["timestamp"])
        prompt = next(e for e in events if e["kind"] == "MessageEvent")["llm_message"]["content"][0]["text"]
        spawned.append((moment(events[0]["timestamp"]) - actions[prompt]) * 1000)
    return spawned


async def one_tree(folder: Path, mode: str, subagents: int, steps: int, model_url: str) -> dict[str, float]:
    workspace = folder / "ws"
    workspace.mkdir(parents=True)
    async with agent_server(folder / "server", **MODES[mode]) as server:
        assert server.process is not None
        pid = server.process.pid
        conversation = await start_conversation(server, model_url, workspace, concurrency=subagents)
        arrivals: list[tuple[float, dict[str, Any]]] = []
        async with socket(server, conversation) as ws:
            cpu0, began = cpu_seconds(pid), time.perf_counter()
            await say(server, conversation)
            while not arrivals or not run_ended(arrivals[-1][1]):
                frame = await ws.recv()
                arrivals.append((time.time(), json.loads(frame)))
            wall, cpu = time.perf_counter() - began, cpu_seconds(pid) - cpu0
        peak = memory_mb(pid)["peak"]
        conversation_dir = server.conversation_dir(conversation)
        spawned = spawn_times(conversation_dir)
    calls = {f["tool_call_id"]: t for t, f in arrivals if f.get("kind") == "ActionEvent" and f.get("tool_name") == "task"
             and "parent_tool_use_id" not in f}
    first: dict[str, float] = {}
    forwarded, own = [], []
    for t, f in arrivals:
        if "parent_tool_use_id" in f:
            first.setdefault(f["parent_tool_use_id"], t)
            forwarded.append((t - moment(f["timestamp"])) * 1000)
        elif f.get("kind") != "ConversationStateUpdateEvent":
            own.append((t - moment(f["timestamp"])) * 1000)
    to_first = [(first[c] - t) * 1000 for c, t in calls.items() if c in first]
    return {
        "wall of the tree, s": wall, "agent-server CPU over the tree, s": cpu, "agent-server peak RSS, MB": peak,
        "OpenHands' spawn: task action → sub-agent's first event, ms (median)": statistics.median(spawned),
        "task frame → first forwarded frame, ms (median)": statistics.median(to_first) if to_first else float("nan"),
        "forwarded frames": float(len(forwarded)),
        "emit → frame, forwarded, p50 ms": percentile(forwarded, 0.5),
        "emit → frame, forwarded, p99 ms": percentile(forwarded, 0.99),
        "emit → frame, the server's own parent events, p50 ms": percentile(own, 0.5),
        "emit → frame, the server's own parent events, p99 ms": percentile(own, 0.99),
        "load average (1 min)": os.getloadavg()[0],
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--subagents", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    console = Console()
    if not (OPENHANDS_PYTHON.parents[1] / ".installed").exists():
        console.print("skipped: no .venv-openhands (run `make openhands`; it needs Python 3.12)")
        return
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "script.json").write_text(json.dumps(script(args.subagents, args.steps)))
        async with serve_app(create_mock_app(Path(tmp) / "script.json")) as model_url:
            for round_ in range(args.rounds):
                order = list(MODES)[round_ % 3:] + list(MODES)[:round_ % 3]  # each mode first once in three
                for mode in order:
                    figures = await one_tree(Path(tmp) / f"{round_}-{mode}", mode, args.subagents, args.steps, model_url)
                    results[mode].append(figures)
                    console.print(f"round {round_ + 1} {mode}: wall {figures['wall of the tree, s']:.2f} s, "
                                  f"CPU {figures['agent-server CPU over the tree, s']:.2f} s, "
                                  f"load {figures['load average (1 min)']:.2f}")
    table = Table(title=f"{args.subagents} sub-agents x {args.steps} steps, {args.rounds} rounds (medians)")
    table.add_column("figure")
    for mode in MODES:
        table.add_column(mode, justify="right")
    for key in results["on"][0]:
        table.add_row(key, *(f"{statistics.median(r[key] for r in results[mode]):.2f}" for mode in MODES))
    console.print(table)
    on, without = (statistics.median(r["agent-server CPU over the tree, s"] for r in results[m]) for m in ("on", "without"))
    wall_on, wall_without = (statistics.median(r["wall of the tree, s"] for r in results[m]) for m in ("on", "without"))
    console.print(f"forwarding's cost to the parent: CPU {100 * (on / without - 1):+.1f} %, wall {100 * (wall_on / wall_without - 1):+.1f} %")


if __name__ == "__main__":
    asyncio.run(main())
