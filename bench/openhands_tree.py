"""An OpenHands tree vs the same tree on a native agent, both on the scripted model over HTTP
(``mock-llm``'s OpenAI dialect), forwarding on, one socket watching the root.

N parallel sub-agents x K ``think`` steps each, then ``finish``. Per backend: stored events per
second of the run, the time from the ``task`` call's frame to its sub-agent's first frame
(median), emit-to-socket latency of forwarded frames (p50/p99: the event's timestamp to its
arrival), CPU per stored event (this process: server and mock, plus the driver's, a child), and
the driver's peak RSS.

    .venv/bin/python bench/openhands_tree.py [--subagents 4] [--steps 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import websockets
from common import isolated_settings, taskwire_server
from rich.console import Console
from rich.table import Table

from taskwire.llm.mock_server import create_mock_app
from tests.openhands.helpers import drivers
from tests.servers import serve_app

REPO = Path(__file__).resolve().parents[1]
OPENHANDS_PYTHON = REPO / ".venv-openhands/bin/python"


def script(subagents: int, steps: int) -> dict[str, Any]:
    lanes = []
    for i in range(subagents):
        turns = [{"tool_calls": [{"name": "think", "arguments": {"thought": f"sub-agent {i} step {k}"}}]} for k in range(steps)]
        turns.append({"tool_calls": [{"name": "finish", "arguments": {"message": f"sub-agent {i} done"}}]})
        lanes.append({"name": f"sub{i}", "match": {"first_user_contains": f"Sub-agent {i} work."}, "turns": turns})
    calls = [{"name": "task", "arguments": {"description": f"part {i}", "prompt": f"Sub-agent {i} work.",
                                            "subagent_type": "general-purpose"}} for i in range(subagents)]
    lanes.append({"name": "main", "turns": [{"tool_calls": calls}, {"tool_calls": [{"name": "finish", "arguments": {"message": "all done"}}]}]})
    return {"strict": True, "lanes": lanes, "usage": {"input_tokens": 10, "output_tokens": 5}}


def peak_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


async def run(kind: str, folder: Path, subagents: int, steps: int) -> dict[str, float]:
    (folder / "script.json").write_text(json.dumps(script(subagents, steps)))
    async with serve_app(create_mock_app(folder / "script.json")) as mock_url:
        settings = isolated_settings(folder, forward_subagent_events=True, max_parallel_subagents=subagents,
                                     openhands_python=str(OPENHANDS_PYTHON))
        cpu0 = time.process_time()
        children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        before, rss = drivers(), 0.0
        async with taskwire_server(settings) as server:
            if kind == "openhands":
                agent = {"kind": "openhands", "tool_concurrency_limit": subagents, "max_iterations": 1000,
                         "llm": {"model": "openai/scripted", "base_url": f"{mock_url}/v1", "api_key": "k"}}
            else:
                agent = {"kind": "native", "max_iterations": 1000,
                         "llm": {"api": "openai", "model": "scripted", "base_url": f"{mock_url}/v1", "api_key": "k"}}
            record = await server.runtime.create(agent, initial_message="Fan out.", run=False)
            frames: list[tuple[float, dict[str, Any]]] = []
            async with websockets.connect(f"{server.ws_url}/sockets/events/{record.id}", max_size=None) as ws:
                await ws.recv()
                started = time.perf_counter()
                await server.runtime.run(record.id)
                while True:
                    frame = json.loads(await ws.recv())
                    frames.append((time.time(), frame))
                    if kind == "openhands" and not rss:
                        for pid in drivers() - before:
                            rss = max(rss, peak_rss_mb(pid))
                    if frame.get("key") == "status" and "subagent_id" not in frame and frame.get("value") in ("finished", "error"):
                        break
                wall = time.perf_counter() - started
            for pid in drivers() - before:
                rss = max(rss, peak_rss_mb(pid))
            entries = await server.runtime.store.list_subagents(record.id) if hasattr(server.runtime.store, "list_subagents") else []
            stored = await server.runtime.store.last_seq(record.id)
        children1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = time.process_time() - cpu0 + (children1.ru_utime + children1.ru_stime) - (children0.ru_utime + children0.ru_stime)
    del entries
    assert frames[-1][1].get("value") == "finished", frames[-1]
    spawned = {f["tool_call_id"]: t for t, f in frames if f.get("kind") == "ActionEvent" and f.get("tool_name") == "task"
               and "parent_tool_use_id" not in f}
    first: dict[str, float] = {}
    latencies = []
    for t, f in frames:
        call = f.get("parent_tool_use_id")
        if call is None:
            continue
        first.setdefault(call, t)
        latencies.append((t - datetime.fromisoformat(f["timestamp"].replace("Z", "+00:00")).timestamp()) * 1000)
    to_first = [(first[c] - t) * 1000 for c, t in spawned.items() if c in first]
    latencies.sort()
    return {
        "events/s": stored / wall, "stored": stored, "wall s": wall,
        "spawn→first sub-agent frame ms (median)": statistics.median(to_first) if to_first else float("nan"),
        "emit→socket p50 ms": latencies[len(latencies) // 2], "emit→socket p99 ms": latencies[int(len(latencies) * 0.99)],
        "CPU ms / event": cpu * 1000 / stored, "driver peak RSS MB": rss,
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--subagents", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    console = Console()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("native", "openhands"):
            folder = Path(tmp) / kind
            folder.mkdir()
            results[kind] = await run(kind, folder, args.subagents, args.steps)
    table = Table(title=f"{args.subagents} sub-agents x {args.steps} steps, forwarding on; load {os.getloadavg()[0]:.2f}")
    table.add_column("figure")
    for kind in results:
        table.add_column(kind, justify="right")
    for key in results["native"]:
        table.add_row(key, *(f"{results[k][key]:.2f}" for k in results))
    console.print(table)


if __name__ == "__main__":
    asyncio.run(main())
