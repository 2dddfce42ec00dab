"""``kind: openhands`` at OpenHands' scale: taskwire beside the real agent-server, same run.

    .venv/bin/python bench/openhands_scale.py [--trees 1,20] [--subagents 3] [--steps 5] [--rounds 5]

Both servers run as processes of their own, offline against one ``mock-llm`` (in this process,
OpenAI dialect), the same tree: a main agent whose first answer makes ``--subagents`` parallel
``task`` calls, each sub-agent ``--steps`` ``think`` calls then ``finish``. N trees at once, each
watched by one raw socket on its root:

- **taskwire**: ``taskwire serve`` (SQLite, forwarding on) and the one OpenHands process it owns
  (``kind: openhands``);
- **agent-server**: ``openhands-agent-server`` 1.58.2 with the plugin ``taskwire-openhands``
  (forwarding on), from ``.venv-openhands``.

Both get an empty ``HOME`` of their own: each sub-agent's terminal starts shells, and a shell
reading this machine's ``~/.bashrc`` (pyenv's init) costs ~0.1 s of CPU, which would weigh on
whichever side had it. Each is warmed up by one tree first (taskwire starts its OpenHands process
at the first run; the agent-server imports its tools at its first conversation), then measured
over the N trees; ``--rounds`` rounds alternate which server goes first, and the table shows
medians:

- memory in total: the proportional set size (PSS) summed over the server and every process
  below it that lived at least 1 s (a child between ``vfork`` and ``exec`` shares its parent's
  memory), sampled every 0.2 s, its maximum; beside it the kernel's own peak (``VmHWM``) of the
  processes that last;
- CPU per sub-agent event: user + system CPU of that whole process tree over the N trees,
  divided by the sub-agent events OpenHands persisted (the same count on both sides; taskwire's
  sockets also carry its ``SubagentStarted/Finished`` and usage frames);
- ``task`` → first sub-agent frame: from the ``task`` ActionEvent's frame on the root's socket,
  and from the call itself (that ActionEvent's own timestamp, as OpenHands persisted it), to the
  first frame stamped with its ``tool_call_id``, p50 / p99; and OpenHands' own spawn (the
  ActionEvent → the sub-agent's first persisted event), which neither socket can change.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
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
from openhands_plugin import moment, percentile
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


TICKS = os.sysconf("SC_CLK_TCK")
TRANSIENT = 1.0
"""Seconds: a younger process below the server is left out of its memory (a child between
``fork``/``vfork`` and ``exec``, often for a ``tmux`` command: it shares its parent's memory,
which would be counted twice)."""


def _age(pid: int, now: float) -> float:
    started = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]) / TICKS
    return now - started


def tree_pss_mb(pid: int) -> float:
    """The proportional set size of ``pid`` and of every process below it that has lived at
    least ``TRANSIENT`` seconds, MB (pages two processes share count once)."""
    total, now = 0, float(Path("/proc/uptime").read_text().split()[0])
    for p in tree_pids(pid):
        try:
            if p != pid and _age(p, now) < TRANSIENT:
                continue
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
        except (OSError, ValueError, IndexError):
            continue
    return total / 1024


def peak_rss_mb(pid: int) -> float:
    """The kernel's high-water mark of resident memory (``VmHWM``) of ``pid`` and of each
    process below it that is still there, summed, MB: the long-lived processes' peaks, which
    no sampling can miss."""
    total = 0.0
    for p in tree_pids(pid):
        try:
            total += next(int(line.split()[1]) for line in Path(f"/proc/{p}/status").read_text().splitlines()
                          if line.startswith("VmHWM:")) / 1024
        except (OSError, ValueError, StopIteration):
            continue
    return total


class Sampler:
    """The tree's summed PSS, every 0.2 s, and its maximum."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak = pid, 0.0
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            self.peak = max(self.peak, await asyncio.to_thread(tree_pss_mb, self.pid))
            await asyncio.sleep(0.2)

    async def stop(self) -> float:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        return max(self.peak, tree_pss_mb(self.pid))


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


Tree = tuple[list[tuple[float, dict[str, Any]]], Path]
"""One root's socket frames (arrival time, frame) and the folder where OpenHands persisted it."""


def persisted(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in (folder / "events").glob("event-*.json")]


def figures_of(trees: list[Tree]) -> dict[str, Any]:
    """Per tree, from its frames and what OpenHands persisted (the same files in both servers):
    the stamped frames; the sub-agent events OpenHands persisted; each ``task`` call's frame →
    its first stamped frame; each ``task`` call (its ActionEvent's own timestamp) → that first
    frame; and OpenHands' own spawn (the ActionEvent → the sub-agent's first persisted event)."""
    stamped, events, frame_to_frame, call_to_frame, spawns = 0, 0, [], [], []
    for frames, folder in trees:
        calls = {f["tool_call_id"]: t for t, f in frames
                 if f.get("kind") == "ActionEvent" and f.get("tool_name") == "task" and "parent_tool_use_id" not in f}
        first: dict[str, float] = {}
        for t, f in frames:
            if f.get("parent_tool_use_id"):
                stamped += 1
                first.setdefault(f["parent_tool_use_id"], t)
        frame_to_frame += [(first[c] - t) * 1000 for c, t in calls.items() if c in first]
        actions = {e["tool_call_id"]: e for e in persisted(folder)
                   if e.get("kind") == "ActionEvent" and e.get("tool_name") == "task"}
        call_to_frame += [(first[c] - moment(e["timestamp"])) * 1000 for c, e in actions.items() if c in first]
        by_prompt = {e["action"]["prompt"]: moment(e["timestamp"]) for e in actions.values()}
        for sub in (folder / "subagents").glob("*"):
            own = sorted(persisted(sub), key=lambda e: e["timestamp"])
            events += len(own)
            prompt = next((e for e in own if e.get("kind") == "MessageEvent"), None)
            text = prompt["llm_message"]["content"][0]["text"] if prompt else None
            if own and text in by_prompt:
                spawns.append((moment(own[0]["timestamp"]) - by_prompt[text]) * 1000)
    return {"stamped": stamped, "events": events, "frame_to_frame": frame_to_frame,
            "call_to_frame": call_to_frame, "spawns": spawns}


# -- taskwire ---------------------------------------------------------------------------

def taskwire(folder: Path) -> ServerProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    env.update(OH_FORWARD_SUBAGENT_EVENTS="true", OH_OPENHANDS_PYTHON=str(OPENHANDS_PYTHON),
               OH_DATABASE_URL=f"sqlite:///{folder / 'taskwire.db'}", OH_CONFIG_FILE=str(folder / "none.toml"),
               # The agent-server's HOME too (``openhands_env``): the terminals' shells read no
               # ~/.bashrc on either side (this machine's runs pyenv's init, ~0.1 s a shell).
               HOME=str(folder / "home"))
    (folder / "home").mkdir(exist_ok=True)
    return ServerProcess("taskwire", folder, env)


def taskwire_ended(frame: dict[str, Any]) -> bool:
    return frame.get("key") == "status" and "subagent_id" not in frame and frame.get("value") in ("finished", "error")


async def taskwire_trees(server: ServerProcess, model_url: str, prefix: str, n: int, subagents: int) -> list[Tree]:
    agent = {"kind": "openhands", "tools": ["task"], "tool_concurrency_limit": subagents, "max_iterations": 1000,
             "llm": {"model": "openai/scripted", "base_url": f"{model_url}/v1", "api_key": "k"}}

    async def one(i: int) -> Tree:
        workspace = f"{prefix}-ws{i}"
        response = await server.client.post("/api/conversations", json={
            "agent": agent, "workspace": workspace, "initial_message": "Fan out.", "run": False})
        assert response.status_code == 201, response.text
        cid = response.json()["id"]

        async def start() -> None:
            assert (await server.client.post(f"/api/conversations/{cid}/run")).status_code == 200

        frames = await watch(f"{server.ws_url}/sockets/events/{cid}", {}, start, taskwire_ended)
        # OpenHands persists the one conversation of this workspace under taskwire's state folder.
        state = Path(server.env["OH_WORKSPACE_PATH"]) / workspace / ".taskwire/openhands"
        return frames, next(d for d in state.iterdir() if (d / "events").is_dir())

    return await asyncio.gather(*(one(i) for i in range(n)))


# -- the agent-server -------------------------------------------------------------------

async def agent_server_trees(server: Any, model_url: str, folder: Path, n: int, subagents: int) -> list[Tree]:
    async def one(i: int) -> Tree:
        workspace = folder / f"ws{i}"
        workspace.mkdir(parents=True, exist_ok=True)
        cid = await start_conversation(server, model_url, workspace, concurrency=subagents)
        headers = {"X-Session-API-Key": server.key} if server.key else {}
        frames = await watch(server.socket_url(cid), headers, lambda: say(server, cid, "Fan out."), run_ended)
        return frames, server.conversation_dir(cid)

    return await asyncio.gather(*(one(i) for i in range(n)))


# -- the run ----------------------------------------------------------------------------

async def measure(pid: int, trees: Callable[[int], Awaitable[list[Tree]]], n: int) -> dict[str, float]:
    await trees(1)  # warm-up
    cpu0, own0 = tree_cpu(pid), time.process_time()
    sampler = Sampler(pid)
    began = time.perf_counter()
    measured = await trees(n)
    wall = time.perf_counter() - began
    cpu1, own1 = tree_cpu(pid), time.process_time()
    peak = await sampler.stop()
    server_rss = memory_mb(pid)["rss"] - sum(memory_mb(p)["rss"] for p in tree_pids(pid) if p != pid and _parent(p) == pid)
    cpu = sum(v - cpu0.get(p, 0.0) for p, v in cpu1.items())
    found = figures_of(measured)
    return {
        "memory in total (PSS), peak MB": peak,
        "peak RSS of the lasting processes (VmHWM), MB": peak_rss_mb(pid),
        "CPU ms / sub-agent event (OpenHands')": cpu * 1000 / max(found["events"], 1),
        "task frame → first sub-agent frame p50 ms": percentile(found["frame_to_frame"], 0.5),
        "task frame → first sub-agent frame p99 ms": percentile(found["frame_to_frame"], 0.99),
        "task call → first sub-agent frame p50 ms": percentile(found["call_to_frame"], 0.5),
        "task call → first sub-agent frame p99 ms": percentile(found["call_to_frame"], 0.99),
        "OpenHands' own spawn p50 ms": percentile(found["spawns"], 0.5),
        "OpenHands' own spawn p99 ms": percentile(found["spawns"], 0.99),
        "of which the server process itself at the end, MB": server_rss,
        "of which the server process itself, CPU s": cpu1.get(pid, 0.0) - cpu0.get(pid, 0.0),
        "CPU s in total": cpu,
        "this bench's process (the model, the sockets), CPU s": own1 - own0,
        "sub-agent events (OpenHands')": float(found["events"]),
        "sub-agent frames": float(found["stamped"]), "wall s": wall, "processes": float(len(cpu1)),
    }


async def run(n: int, subagents: int, steps: int, tmp: Path, model_url: str, first: str) -> dict[str, dict[str, float]]:
    """One round of N trees on each server, ``first`` first (rounds alternate the order)."""
    results = {}

    async def ours() -> None:
        folder = tmp / f"taskwire-{n}-{time.monotonic_ns()}"
        folder.mkdir()
        async with taskwire(folder) as server:
            assert server.process is not None
            results["taskwire"] = await measure(
                server.process.pid, lambda k: taskwire_trees(server, model_url, f"t{time.monotonic_ns()}", k, subagents), n)

    async def theirs() -> None:
        folder = tmp / f"agent-server-{n}-{time.monotonic_ns()}"
        folder.mkdir()
        # Its default lets 10 conversations run at once (429 past that); taskwire has no such cap.
        async with agent_server(folder / "server", forward="true", config={"max_concurrent_runs": n + 2}) as server:
            assert server.process is not None
            results["agent-server"] = await measure(
                server.process.pid,
                lambda k: agent_server_trees(server, model_url, folder / f"t{time.monotonic_ns()}", k, subagents), n)

    for side in ((ours, theirs) if first == "taskwire" else (theirs, ours)):
        await side()
    return results


def median_of(rounds: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    return {side: {key: statistics.median(r[side][key] for r in rounds) for key in rounds[0][side]}
            for side in rounds[0]}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trees", default="1,20")
    parser.add_argument("--subagents", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1, help="rounds per N, alternating which server goes first; medians")
    parser.add_argument("--json", type=Path, help="also write the figures there, by N")
    args = parser.parse_args()
    every: dict[int, dict[str, Any]] = {}
    console = Console()
    if not (OPENHANDS_PYTHON.parents[1] / ".installed").exists():
        console.print("skipped: no .venv-openhands (run `make openhands`; it needs Python 3.12)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "script.json").write_text(json.dumps(openhands_plugin.script(args.subagents, args.steps)))
        async with serve_app(create_mock_app(Path(tmp) / "script.json")) as model_url:
            for n in (int(v) for v in args.trees.split(",")):
                load = os.getloadavg()[0]
                rounds = []
                for k in range(args.rounds):
                    rounds.append(await run(n, args.subagents, args.steps, Path(tmp), model_url,
                                            "taskwire" if k % 2 == 0 else "agent-server"))
                results = median_of(rounds)
                every[n] = {**results, "rounds": rounds}
                table = Table(title=f"N = {n} trees of {args.subagents} sub-agents x {args.steps} steps; "
                                    f"median of {args.rounds} round(s); load {load:.2f} → {os.getloadavg()[0]:.2f}")
                for column in ("figure", "taskwire", "agent-server", "ratio"):
                    table.add_column(column, justify="left" if column == "figure" else "right")
                for key in results["taskwire"]:
                    ours, theirs = results["taskwire"][key], results["agent-server"][key]
                    table.add_row(key, f"{ours:.1f}", f"{theirs:.1f}", f"{ours / theirs:.2f}x" if theirs else "")
                console.print(table)
                if args.rounds > 1:
                    for key in ("memory in total (PSS), peak MB", "CPU ms / sub-agent event (OpenHands')",
                                "task call → first sub-agent frame p50 ms", "task frame → first sub-agent frame p50 ms"):
                        ratios = sorted(r["taskwire"][key] / r["agent-server"][key] for r in rounds if r["agent-server"][key])
                        console.print(f"  {key}, ratio per round: " + ", ".join(f"{x:.2f}x" for x in ratios))
                sys.stdout.flush()
    if args.json:
        args.json.write_text(json.dumps(every, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
