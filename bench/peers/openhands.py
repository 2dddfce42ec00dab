"""The peer, measured in the project: the OpenHands agent-server 1.58.2 beside taskwire.

    make bench-peers                                   # 1,000,000 events, 2 rounds
    .venv/bin/python bench/peers/openhands.py --events 100000 [--rounds 2] [--data DIR]

Installs the peer into its own Python 3.12 venv from the one OpenHands lock (``plugins/openhands-agent-server/requirements-lock.txt``) (a skip,
with the reason, when there is no Python 3.12), then builds the same conversation of N events
for both servers (``workload.py``): OpenHands' one JSON file per event written with its SDK's
classes (``openhands_events.py``, in the peer's venv), taskwire's SQLite store written through
``SQLiteStore.append`` (``taskwire_events.py``). Then, peer and taskwire in turn, each round a
new process of each: start to first events response, pages of 100 (first, middle, newest), a
count by kind, the first page of a search for a word in 1 % of the events, the whole log
replayed over one WebSocket, 200 user messages posted (``run: false``) and timed to their
frame on an open socket, and the server's resident memory. The load average is printed beside
each run; the last table gives the ratios of the medians. ``--data DIR`` keeps both logs there
and reuses them on the next run with the same N.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import httpx  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import measure  # noqa: E402
import peer_setup  # noqa: E402
import servers  # noqa: E402
import taskwire_events  # noqa: E402
from workload import middle_index  # noqa: E402

console = Console(width=200)
START_TIMEOUT = 3600.0
# (label, key, unit, lower is better)
ROWS = [
    ("start → first events response", "first_response", "s", True),
    ("page of 100: first, p50", "page_first", "ms", True),
    ("page of 100: middle, p50", "page_middle", "ms", True),
    ("page of 100: newest, p50", "page_newest", "ms", True),
    ("count by kind, p50", "count_kind", "ms", True),
    ("search, word in 1 % of events, first page, p50", "search_rare", "ms", True),
    ("full WebSocket replay", "replay_rate", "events/s", False),
    ("live POST → socket p50", "live_p50", "ms", True),
    ("live POST → socket p99", "live_p99", "ms", True),
    ("RSS after first response", "rss_loaded", "MB", True),
    ("RSS after replay and live", "rss_end", "MB", True),
]


def _stamp(folder: Path) -> dict[str, Any] | None:
    path = folder / "built.json"
    return json.loads(path.read_text()) if path.exists() else None


async def build_peer(python: Path, folder: Path, count: int) -> dict[str, Any]:
    """The conversation created by the peer's own API, then its events written by its SDK."""
    if (built := _stamp(folder)) and built["events"] == count:
        return built
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    argv, env, port = servers.openhands_server(python)
    async with servers.running(argv, env, folder, port, folder / "server.log") as server:
        async with httpx.AsyncClient(base_url=server.base, timeout=120) as client:
            await _wait_alive(client, server)
            # A model is required, never called: no run is started, and no title is asked for
            # (``autotitle`` would ask the model on the first user message).
            agent = {"llm": {"model": "openai/gpt-4o", "api_key": "unused", "base_url": "http://127.0.0.1:9"}}
            response = await client.post("/api/conversations", json={"agent": agent, "workspace": {"working_dir": str(folder / "project")},
                                                                    "autotitle": False})
            response.raise_for_status()
            conversation = response.json()["id"]
            # The server's own first events: its system prompt (the SDK requires one before any
            # user message) and this message; the workload goes after them.
            first = {"role": "user", "content": [{"type": "text", "text": "Start."}], "run": False}
            (await client.post(f"/api/conversations/{conversation}/events", json=first)).raise_for_status()
    stored = folder / "workspace" / "conversations" / conversation.replace("-", "")
    began = time.perf_counter()
    written = subprocess.run([str(python), "-P", str(HERE / "openhands_events.py"), str(stored), "--events", str(count)],
                             env=servers.peer_environment(), capture_output=True, text=True)
    if written.returncode != 0:
        raise RuntimeError(f"writing the peer's events failed:\n{written.stderr[-3000:]}")
    built = {**json.loads(written.stdout.strip().splitlines()[-1]), "conversation": conversation,
             "seconds": time.perf_counter() - began}
    (folder / "built.json").write_text(json.dumps(built))
    return built


async def _wait_alive(client: httpx.AsyncClient, server: servers.Process) -> None:
    while True:
        try:
            if (await client.get("/alive")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if server.proc.returncode is not None:
            raise RuntimeError("the peer's server exited while starting")
        await asyncio.sleep(0.1)


async def build_taskwire(folder: Path, count: int) -> dict[str, Any]:
    """The conversation in taskwire's SQLite store, through its own appends."""
    if (built := _stamp(folder)) and built["events"] == count:
        return built
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    began = time.perf_counter()
    conversation = await taskwire_events.load(folder / "taskwire.db", count)
    seconds = time.perf_counter() - began
    import sqlite3

    with sqlite3.connect(folder / "taskwire.db") as db:
        size = db.execute("SELECT sum(length(json)) FROM events").fetchone()[0]
    built = {"events": count, "bytes": size, "conversation": conversation, "seconds": seconds}
    (folder / "built.json").write_text(json.dumps(built))
    return built


async def measure_run(target: measure.Target, server: servers.Process, length: int, tag: str) -> dict[str, Any]:
    """One round's figures for one server, whose log holds ``length`` events."""
    figures: dict[str, Any] = {"first_response": await measure.first_response(target, server.started, START_TIMEOUT)}
    figures["rss_loaded"] = server.memory()["rss"]
    reads = await measure.reads(target)
    figures.update({key: timing.p50 for key, timing in reads.items()})
    figures["checks"] = {"count_kind": reads["count_kind"].answer, "search_rare": len(reads["search_rare"].answer["items"]),
                         "page_middle": len(reads["page_middle"].answer["items"])}
    replayed = await measure.replay(target, length)
    figures["replay_rate"] = replayed["rate"]
    latency = await measure.live(target, tag)
    figures["live_p50"], figures["live_p99"] = latency["p50"], latency["p99"]
    memory = server.memory()
    figures["rss_end"], figures["rss_peak"] = memory["rss"], memory["peak"]
    return figures


async def run_peer(python: Path, folder: Path, built: dict[str, Any], count: int, tag: str) -> dict[str, Any]:
    argv, env, port = servers.openhands_server(python)
    async with servers.running(argv, env, folder, port, folder / "server.log") as server:
        target = measure.Target("OpenHands", server.base, built["conversation"], {"page_id": built["ids"]["middle"]},
                                lambda text: {"role": "user", "content": [{"type": "text", "text": text}], "run": False})
        return await measure_run(target, server, built["before"] + count, tag)


async def run_taskwire(folder: Path, built: dict[str, Any], count: int, tag: str) -> dict[str, Any]:
    argv, env, port = servers.taskwire_server(folder / "taskwire.db", folder)
    async with servers.running(argv, env, servers.ROOT, port, folder / "server.log") as server:
        target = measure.Target("taskwire", server.base, built["conversation"], {"after_seq": middle_index(count)},
                                lambda text: {"role": "user", "content": text, "run": False})
        return await measure_run(target, server, count, tag)


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _cell(value: float, unit: str) -> str:
    if unit == "events/s":
        return f"{value:,.0f}"
    if unit == "s" or value < 10:
        return f"{value:.2f}"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def report(runs: list[tuple[str, dict[str, Any], str, str]], count: int, built: dict[str, dict[str, Any]]) -> None:
    """Each run's figures with the load average beside them, then the ratios of the medians."""
    table = Table(title=f"each run, one conversation of {count:,} events (in the order run)")
    table.add_column("measure")
    for n, (side, _, before, after) in enumerate(runs, 1):
        table.add_column(f"{n}. {side}\nload {before}\n→ {after}", justify="right")
    for label, key, unit, _ in ROWS:
        table.add_row(f"{label}, {unit}", *(_cell(figures[key], unit) for _, figures, _, _ in runs))
    table.add_row("checks: count, rare hits, middle page", *(
        f"{f['checks']['count_kind']:,} / {f['checks']['search_rare']} / {f['checks']['page_middle']}" for _, f, _, _ in runs))
    console.print(table)
    ratios = Table(title=f"OpenHands agent-server 1.58.2 against taskwire, {count:,} events: medians of the runs above")
    for column in ("measure", "OpenHands", "taskwire", "taskwire better by"):
        ratios.add_column(column, justify="left" if column == "measure" else "right")
    for label, key, unit, lower in ROWS:
        peer = statistics.median(f[key] for side, f, _, _ in runs if side == "OpenHands")
        ours = statistics.median(f[key] for side, f, _, _ in runs if side == "taskwire")
        factor = (peer / ours if lower else ours / peer) if min(peer, ours) > 0 else float("nan")
        ratios.add_row(label, f"{_cell(peer, unit)} {unit}", f"{_cell(ours, unit)} {unit}", f"{factor:,.1f}×")
    console.print(ratios)
    for side, info in built.items():
        console.print(f"{side}: {info['events']:,} events stored, {info['bytes'] / info['events']:,.0f} bytes of JSON an event "
                      f"(built in {info['seconds']:.0f} s)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of (peer, taskwire)")
    parser.add_argument("--data", type=Path, help="keep both logs here and reuse them (default: a temporary folder)")
    parser.add_argument("--venv", type=Path, default=peer_setup.VENV, help="the peer's venv (made if missing)")
    args = parser.parse_args()
    try:
        python = peer_setup.peer_python(args.venv)
    except peer_setup.Skip as skip:
        console.print(str(skip))
        return
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        data = args.data or Path(tmp)
        console.print(f"building {args.events:,} events for each server in {data} ...")
        built = {"OpenHands": await build_peer(python, data / "openhands", args.events),
                 "taskwire": await build_taskwire(data / "taskwire", args.events)}
        runs = []
        for round_ in range(args.rounds):
            for side in ("OpenHands", "taskwire"):
                before = _load()
                tag = f"{round_}{side[0]}{int(time.time())}"
                if side == "OpenHands":
                    figures = await run_peer(python, data / "openhands", built[side], args.events, tag)
                else:
                    figures = await run_taskwire(data / "taskwire", built[side], args.events, tag)
                runs.append((side, figures, before, _load()))
                console.print(f"round {round_ + 1}, {side}: first response {figures['first_response']:.2f} s, "
                              f"replay {figures['replay_rate']:,.0f} events/s (load {before} → {runs[-1][3]})")
        report(runs, args.events, built)


if __name__ == "__main__":
    asyncio.run(main())
