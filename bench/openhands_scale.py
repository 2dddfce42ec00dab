"""``kind: openhands`` at OpenHands' scale: taskwire beside the real agent-server, same run.

    .venv/bin/python bench/openhands_scale.py [--trees 1,20] [--subagents 3] [--steps 5]

Both servers run as processes of their own, offline against one ``mock-llm`` (in this process,
OpenAI dialect), the same tree: a main agent whose first answer makes ``--subagents`` parallel
``task`` calls, each sub-agent ``--steps`` ``think`` calls then ``finish``. N trees at once, each
watched by one raw socket on its root:

- **taskwire**: ``taskwire serve`` (SQLite, forwarding on) and the one OpenHands process it owns
  (``kind: openhands``);
- **agent-server**: ``openhands-agent-server`` 1.58.2 with the plugin ``taskwire-openhands``
  (forwarding on), from ``.venv-openhands``.

Each is warmed up by one tree first (taskwire starts its OpenHands process at the first run; the
agent-server imports its tools at its first conversation), then measured over the N trees:

- memory in total: the RSS summed over the server and every process below it (the OpenHands
  process, tmux, ...), sampled every 0.2 s, its maximum;
- CPU per sub-agent event: user + system CPU of that whole process tree over the N trees,
  divided by the stamped sub-agent frames the sockets received;
- ``task`` call → first sub-agent frame: on each socket, the ``task`` ActionEvent's frame to the
  first frame stamped with its ``tool_call_id``, p50 / p99.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import openhands_plugin
import websockets
from common import ROOT
from peers.servers import cpu_seconds, memory_mb
from rich.console import Console
from rich.table import Table

from taskwire.llm.mock_server import create_mock_app
from tests.openhands_plugin.agent_server import agent_server, run_ended, say, start_conversation
from tests.servers import ServerProcess, serve_app

OPENHANDS_PYTHON = ROOT / ".venv-openhands/bin/python"
RUN_TIMEOUT = 600


def tree_pids(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def tree_cpu(pid: int) -> dict[int, float]:
    """CPU seconds of each process of the tree."""
    cpu = {}
    for p in tree_pids(pid):
        try:
            cpu[p] = cpu_seconds(p)
        except OSError:
            continue
    return cpu


class Sampler:
    """The tree's summed RSS, every 0.2 s, and its maximum."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak = pid, 0.0
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            self.peak = max(self.peak, await asyncio.to_thread(lambda: memory_mb(self.pid)["rss"]))
            await asyncio.sleep(0.2)

    async def stop(self) -> float:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        return max(self.peak, memory_mb(self.pid)["rss"])


async def watch(url: str, headers: dict[str, str], start: Callable[[], Awaitable[None]],
                ended: Callable[[dict[str, Any]], bool]) -> list[tuple[float, dict[str, Any]]]:
    """Every frame of one root's socket (arrival time, frame) from ``start`` until ``ended``."""
    frames: list[tuple[float, dict[str, Any]]] = []
    async with websockets.connect(url, additional_headers=headers, max_size=None) as ws:
        await asyncio.wait_for(ws.recv(), 30)
        await start()
        async with asyncio.timeout(RUN_TIMEOUT):
            while not frames or not ended(frames[-1][1]):
                frames.append((time.time(), json.loads(await ws.recv())))
    return frames


def figures_of(frames: list[list[tuple[float, dict[str, Any]]]]) -> tuple[int, list[float]]:
    """The stamped sub-agent frames, and each ``task`` call → its first stamped frame, ms."""
    stamped, delays = 0, []
    for tree in frames:
        calls = {f["tool_call_id"]: t for t, f in tree
                 if f.get("kind") == "ActionEvent" and f.get("tool_name") == "task" and "parent_tool_use_id" not in f}
        first: dict[str, float] = {}
        for t, f in tree:
            if f.get("parent_tool_use_id"):
                stamped += 1
                first.setdefault(f["parent_tool_use_id"], t)
        delays += [(first[c] - t) * 1000 for c, t in calls.items() if c in first]
    return stamped, delays


# -- taskwire ---------------------------------------------------------------------------

@asynccontextmanager
async def taskwire(folder: Path) -> AsyncIterator[ServerProcess]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    env.update(OH_FORWARD_SUBAGENT_EVENTS="true", OH_OPENHANDS_PYTHON=str(OPENHANDS_PYTHON),
               OH_DATABASE_URL=f"sqlite:///{folder / 'taskwire.db'}", OH_CONFIG_FILE=str(folder / "none.toml"))
    server = ServerProcess("taskwire", folder, env)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
        await server.client.aclose()


def taskwire_ended(frame: dict[str, Any]) -> bool:
    return frame.get("key") == "status" and "subagent_id" not in frame and frame.get("value") in ("finished", "error")


async def taskwire_trees(server: ServerProcess, model_url: str, prefix: str, n: int, subagents: int) -> list[Any]:
    agent = {"kind": "openhands", "tools": ["task"], "tool_concurrency_limit": subagents, "max_iterations": 1000,
             "llm": {"model": "openai/scripted", "base_url": f"{model_url}/v1", "api_key": "k"}}

    async def one(i: int) -> list[tuple[float, dict[str, Any]]]:
        response = await server.client.post("/api/conversations", json={
            "agent": agent, "workspace": f"{prefix}-ws{i}", "initial_message": "Fan out.", "run": False})
        assert response.status_code == 201, response.text
        cid = response.json()["id"]

        async def start() -> None:
            assert (await server.client.post(f"/api/conversations/{cid}/run")).status_code == 200

        return await watch(f"{server.ws_url}/sockets/events/{cid}", {}, start, taskwire_ended)

    return await asyncio.gather(*(one(i) for i in range(n)))


# -- the agent-server -------------------------------------------------------------------

async def agent_server_trees(server: Any, model_url: str, folder: Path, n: int, subagents: int) -> list[Any]:
    async def one(i: int) -> list[tuple[float, dict[str, Any]]]:
        workspace = folder / f"ws{i}"
        workspace.mkdir(parents=True, exist_ok=True)
        cid = await start_conversation(server, model_url, workspace, concurrency=subagents)
        headers = {"X-Session-API-Key": server.key} if server.key else {}
        return await watch(server.socket_url(cid), headers, lambda: say(server, cid, "Fan out."), run_ended)

    return await asyncio.gather(*(one(i) for i in range(n)))


# -- the run ----------------------------------------------------------------------------

async def measure(pid: int, trees: Callable[[int], Awaitable[list[Any]]], n: int) -> dict[str, float]:
    await trees(1)  # warm-up
    cpu0 = tree_cpu(pid)
    sampler = Sampler(pid)
    began = time.perf_counter()
    frames = await trees(n)
    wall = time.perf_counter() - began
    cpu1 = tree_cpu(pid)
    peak = await sampler.stop()
    server_rss = memory_mb(pid)["rss"] - sum(memory_mb(p)["rss"] for p in tree_pids(pid) if p != pid and _parent(p) == pid)
    cpu = sum(v - cpu0.get(p, 0.0) for p, v in cpu1.items())
    stamped, delays = figures_of(frames)
    delays.sort()
    return {
        "memory in total, peak MB": peak,
        "CPU ms / sub-agent event": cpu * 1000 / max(stamped, 1),
        "task → first sub-agent frame p50 ms": delays[len(delays) // 2] if delays else float("nan"),
        "task → first sub-agent frame p99 ms": delays[min(len(delays) - 1, int(len(delays) * 0.99))] if delays else float("nan"),
        "of which the server process itself at the end, MB": server_rss,
        "sub-agent frames": float(stamped), "wall s": wall, "processes": float(len(cpu1)),
    }


async def run(n: int, subagents: int, steps: int, tmp: Path, model_url: str) -> dict[str, dict[str, float]]:
    results = {}
    folder = tmp / f"taskwire-{n}"
    folder.mkdir()
    async with taskwire(folder) as server:
        assert server.process is not None
        results["taskwire"] = await measure(
            server.process.pid, lambda k: taskwire_trees(server, model_url, f"t{time.monotonic_ns()}", k, subagents), n)
    folder = tmp / f"agent-server-{n}"
    folder.mkdir()
    # Its default lets 10 conversations run at once (429 past that); taskwire has no such cap.
    async with agent_server(folder / "server", forward="true", config={"max_concurrent_runs": n + 2}) as server:
        assert server.process is not None
        results["agent-server"] = await measure(
            server.process.pid, lambda k: agent_server_trees(server, model_url, folder / f"t{time.monotonic_ns()}", k, subagents), n)
    return results


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trees", default="1,20")
    parser.add_argument("--subagents", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the figures there, by N")
    args = parser.parse_args()
    every: dict[int, dict[str, dict[str, float]]] = {}
    console = Console()
    if not (OPENHANDS_PYTHON.parents[1] / ".installed").exists():
        console.print("skipped: no .venv-openhands (run `make openhands`; it needs Python 3.12)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "script.json").write_text(json.dumps(openhands_plugin.script(args.subagents, args.steps)))
        async with serve_app(create_mock_app(Path(tmp) / "script.json")) as model_url:
            for n in (int(v) for v in args.trees.split(",")):
                load = os.getloadavg()[0]
                results = every[n] = await run(n, args.subagents, args.steps, Path(tmp), model_url)
                table = Table(title=f"N = {n} trees of {args.subagents} sub-agents x {args.steps} steps; "
                                    f"load {load:.2f} → {os.getloadavg()[0]:.2f}")
                for column in ("figure", "taskwire", "agent-server", "ratio"):
                    table.add_column(column, justify="left" if column == "figure" else "right")
                for key in results["taskwire"]:
                    ours, theirs = results["taskwire"][key], results["agent-server"][key]
                    table.add_row(key, f"{ours:.1f}", f"{theirs:.1f}", f"{ours / theirs:.2f}x" if theirs else "")
                console.print(table)
                sys.stdout.flush()
    if args.json:
        args.json.write_text(json.dumps(every, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
