"""Many conversations at once: N trees running together, each watched live by one socket.

    .venv/bin/python bench/many.py                       # N = 10, 100, 500; then two replicas
    .venv/bin/python bench/many.py --sizes 10,100 --replica-sizes 100 --steps 5

Each of the N root conversations runs on the scripted model: one response with 4 ``task``
calls (4 sub-agents in parallel), each sub-agent ``--steps`` ``think`` calls then ``finish``.
Every tree is watched by one socket (forwarding on, so the sub-agents' events reach it live);
the sockets live in ``--fleets`` client processes (``bench/ws_client.py --fleet``). The server
is a ``taskwire serve`` process of its own, started fresh for every N, with the soft file
descriptor limit at ``--nofile`` (1024, the usual default) so a leak shows up as an error.

Printed per N: events stored per second, events delivered per second to all sockets together,
emit-to-socket p50/p99 (each event's ``timestamp``, given when the event is built, to its
arrival), the server's peak RSS, the event loop's largest lag (``/metrics``, measured inside
the server), and the load average. The ceiling, measured in the same run: a bare ``websockets``
server sending the same frames (count and size) to the same fleets as fast as it can.

Then PostgreSQL + Redis: one replica, and two replicas each owning half the trees with every
socket on the other replica than its tree's owner; the ratio of the two delivered rates.
Needs PostgreSQL and Redis for that part (``make services``); ``--skip-replicas`` leaves it out.
It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import websockets
from common import ROOT
from forwarding import fanout_script
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console
from rich.table import Table
from scaleout import REDIS, postgres_schema

from tests.servers import ServerProcess

SUBAGENTS = 4


def tree_script(steps: int, delay: float) -> str:
    """``bench/forwarding.py``'s fan-out (4 sub-agents x ``steps`` think calls), every model
    answer ``delay`` seconds late (0: at once, so the trees load the server as fast as it goes)."""
    script = json.loads(fanout_script(SUBAGENTS, steps))
    if delay:
        for lane in script["lanes"]:
            for turn in lane["turns"]:
                turn["delay"] = delay
    return json.dumps(script)


# -- the servers ----------------------------------------------------------------------------


def replica_env(folder: Path, database_url: str, redis_url: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    env.update(
        OH_DATABASE_URL=database_url, OH_FORWARD_SUBAGENT_EVENTS="true", OH_LLM_API="scripted",
        OH_MAX_PARALLEL_SUBAGENTS=str(SUBAGENTS), OH_WS_QUEUE_SIZE="1000000", OH_MAX_SUBSCRIBERS="100000",
        OH_CONFIG_FILE=str(folder / "none.toml"), PYTHONPATH=str(ROOT),
    )
    if redis_url:
        env["OH_REDIS_URL"] = redis_url
    return env


async def scrape(replica: ServerProcess) -> dict[str, float]:
    """``/metrics`` summed by sample name (and by name and generation for the collector's)."""
    text = (await replica.client.get("/metrics")).text
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
            if "generation" in sample.labels:
                totals[f"{sample.name}_{sample.labels['generation']}"] = sample.value
            if "le" in sample.labels:  # a histogram's bucket: kept by its bound
                key = f"{sample.name}@{sample.labels['le']}"
                totals[key] = totals.get(key, 0.0) + sample.value
    return totals


def quantile_ms(before: list[dict[str, float]], after: list[dict[str, float]], name: str, q: float) -> float:
    """The ``q`` quantile of histogram ``name`` over the run (the buckets' growth, summed over
    replicas), as Prometheus's ``histogram_quantile`` gives it: linear within a bucket."""
    prefix = f"{name}_bucket@"
    counts: dict[float, float] = {}
    for b, a in zip(before, after):
        for key, value in a.items():
            if key.startswith(prefix):
                bound = float(key[len(prefix):])
                counts[bound] = counts.get(bound, 0.0) + value - b.get(key, 0.0)
    bounds = sorted(counts)
    if not bounds or counts[bounds[-1]] <= 0:
        return 0.0
    rank = q * counts[bounds[-1]]
    lower, below = 0.0, 0.0
    for bound in bounds:
        if counts[bound] >= rank:
            if bound == float("inf"):
                return lower * 1000  # past the last finite bound: its bound, as Prometheus does
            share = (rank - below) / max(counts[bound] - below, 1e-12)
            return (lower + (bound - lower) * share) * 1000
        lower, below = bound, counts[bound]
    return lower * 1000


def peak_rss_mb(replica: ServerProcess) -> float:
    assert replica.process is not None
    for line in Path(f"/proc/{replica.process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(replica: ServerProcess) -> float:
    """User and system CPU time the replica's process has used (all its threads)."""
    assert replica.process is not None
    fields = Path(f"/proc/{replica.process.pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def open_files(replica: ServerProcess) -> int:
    assert replica.process is not None
    return len(os.listdir(f"/proc/{replica.process.pid}/fd"))


async def sample_open_files(replicas: list[ServerProcess], peak: list[int]) -> None:
    """Keep ``peak[0]`` at the most file descriptors any replica held (until cancelled)."""
    while True:
        peak[0] = max(peak[0], *(open_files(r) for r in replicas))
        await asyncio.sleep(0.25)


def errors_logged(replica: ServerProcess) -> list[str]:
    text = replica.log_path.read_text(errors="replace") if replica.log_path.exists() else ""
    return [line for line in text.splitlines() if "Traceback" in line or " ERROR " in line or "Error:" in line][:5]


# -- the clients ----------------------------------------------------------------------------


class Fleet:
    """``bench/ws_client.py --fleet`` in a subprocess, watching ``urls`` until each root ends."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, str(ROOT / "bench/ws_client.py"), "--fleet", "--until-finished", "--latency",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)},
            limit=1 << 30,  # the last line holds every latency
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(("\n".join(self.urls) + "\n\n").encode())
        await self.proc.stdin.drain()
        line = await asyncio.wait_for(self.proc.stdout.readline(), 300)
        if line.strip() != b"connected":
            raise RuntimeError(f"a client fleet did not connect: {line!r}")

    async def result(self, timeout: float) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        await self.proc.wait()
        return json.loads(line)

    def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()


async def watched(urls: list[str], fleets: int, go: Any, timeout: float) -> dict[str, Any]:
    """Start the fleets on ``urls``, await ``go()`` once all are connected, merge their results."""
    share = [urls[n::fleets] for n in range(fleets) if urls[n::fleets]]
    clients = [Fleet(part) for part in share]
    try:
        await asyncio.gather(*(client.start() for client in clients))
        started = time.time()
        await go()
        results = await asyncio.gather(*(client.result(timeout) for client in clients))
    finally:
        for client in clients:
            client.kill()
    latencies = sorted(v for r in results for v in r["latencies_ms"])
    first = min(r["first"] for r in results if r["frames"])
    last = max(r["last"] for r in results)
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]  # noqa: E731
    return {"frames": sum(r["frames"] for r in results), "started": started, "first": first, "last": last,
            "p50_ms": pick(0.5), "p99_ms": pick(0.99)}


# -- one run --------------------------------------------------------------------------------


async def run_trees(
    replicas: list[ServerProcess], size: int, script: str, fleets: int, crossed: bool, stagger: float = 0.0
) -> dict[str, Any]:
    """``size`` trees, created round-robin on ``replicas`` (each its tree's owner), each watched
    by one socket (on the next replica when ``crossed``); returns the figures."""
    agent = {"kind": "native", "llm": {"api": "scripted", "script": script}, "max_iterations": 1000}
    gate = asyncio.Semaphore(20)

    async def create(n: int) -> tuple[ServerProcess, str]:
        owner = replicas[n % len(replicas)]
        async with gate:
            response = await owner.client.post("/api/conversations", json={"agent": agent, "initial_message": "Fan out.", "run": False})
        response.raise_for_status()
        return owner, response.json()["id"]

    trees = await asyncio.gather(*(create(n) for n in range(size)))
    urls = []
    for n, (owner, conversation_id) in enumerate(trees):
        watcher = replicas[(n + 1) % len(replicas)] if crossed else owner
        urls.append(f"{watcher.ws_url}/sockets/events/{conversation_id}")
    before = [await scrape(r) for r in replicas]
    cpu_before = sum(cpu_seconds(r) for r in replicas)

    async def go() -> None:
        async def run(n: int, owner: ServerProcess, conversation_id: str) -> None:
            # With a model that takes time, the trees start spread over one answer's delay, as
            # conversations arrive over time: else every agent's answer lands in the same instant.
            await asyncio.sleep(stagger * n / size)
            async with gate:
                (await owner.client.post(f"/api/conversations/{conversation_id}/run")).raise_for_status()

        await asyncio.gather(*(run(n, owner, cid) for n, (owner, cid) in enumerate(trees)))

    peak_files = [0]
    sampler = asyncio.create_task(sample_open_files(replicas, peak_files))
    try:
        received = await watched(urls, fleets, go, timeout=1800)
    finally:
        sampler.cancel()
    after = [await scrape(r) for r in replicas]
    cpu = sum(cpu_seconds(r) for r in replicas) - cpu_before
    stored = sum(a.get("taskwire_events_appended_total", 0) - b.get("taskwire_events_appended_total", 0) for a, b in zip(after, before))
    # One store behind every replica: any of them counts the whole.
    finished = int((await replicas[0].client.get("/api/conversations/count", params={"status": "finished"})).json())
    wall = received["last"] - received["started"]
    return {
        "trees": size, "finished": finished,
        "stored": stored, "frames": received["frames"],
        "stored_rate": stored / wall, "delivered_rate": received["frames"] / (received["last"] - received["first"]),
        "p50_ms": received["p50_ms"], "p99_ms": received["p99_ms"],
        "store_p99_ms": quantile_ms(before, after, "taskwire_store_append_seconds", 0.99),
        "rss_mb": max(peak_rss_mb(r) for r in replicas), "files": peak_files[0],
        "cores": cpu / wall, "cpu_ms_per_event": cpu * 1000 / max(stored, 1),
        "lag_p99_ms": quantile_ms(before, after, "taskwire_event_loop_lag_seconds", 0.99),
        "lag_ms": max(a.get("taskwire_event_loop_lag_max_seconds", 0) for a in after) * 1000,
        "gc_ms": max(a.get("taskwire_gc_pause_max_seconds", 0) for a in after) * 1000,
        "gc_total_s": max(a.get("taskwire_gc_pause_seconds_total", 0) for a in after),
        "gc_by_generation": [max(a.get(f"taskwire_gc_pause_seconds_total_{g}", 0) for a in after) for g in range(3)],
        "load": os.getloadavg()[0], "errors": [e for r in replicas for e in errors_logged(r)],
    }


PROFILE: Path | None = None
"""Where ``--profile`` writes each server's py-spy profile (collapsed stacks), if set."""


async def with_replicas(folder: Path, count: int, database_url: str, redis_url: str | None, work: Any) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    replicas = [ServerProcess(f"replica-{n}", folder, replica_env(folder, database_url, redis_url)) for n in range(count)]
    profilers = []
    try:
        await asyncio.gather(*(r.start() for r in replicas))
        if PROFILE is not None:
            for replica in replicas:
                assert replica.process is not None
                out = PROFILE / f"{folder.name}-{replica.name}.txt"
                profilers.append(await asyncio.create_subprocess_exec(
                    "py-spy", "record", "--format", "raw", "--rate", "200", "-o", str(out), "-p", str(replica.process.pid),
                    stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL))
        return await work(replicas)
    finally:
        for replica in replicas:
            await replica.stop()
            await replica.client.aclose()
        for profiler in profilers:  # each writes its file once its process is gone
            await profiler.wait()


# -- the ceiling ----------------------------------------------------------------------------


def frame_of(seq: int) -> str:
    """A frame the size of a sub-agent's tool event, stamped now."""
    now = datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")
    return json.dumps({
        "id": "0192f3a4-5b6c-7d8e-9f00-112233445566", "kind": "ObservationEvent", "timestamp": now,
        "source": "environment", "seq": seq, "tool_name": "think", "tool_call_id": "call_sub1_3_0",
        "content": "Your thought has been logged.", "is_error": False,
        "parent_tool_use_id": "call_main_0_1", "subagent_id": "0192f3a4-5b6c-7d8e-9f00-665544332211",
    })


async def ceiling(size: int, frames: int, fleets: int) -> dict[str, Any]:
    """A bare ``websockets`` server sending ``frames`` frames in all, spread over ``size``
    sockets, as fast as it can, to the same fleets; the last frame ends each socket's count."""
    per_socket = max(1, frames // size)
    start = asyncio.Event()

    async def handler(socket: Any) -> None:
        await socket.send(json.dumps({"kind": "ConversationStateUpdateEvent", "key": "full_state", "value": {"last_seq": 0}}))
        await start.wait()
        for seq in range(1, per_socket):
            await socket.send(frame_of(seq))
        await socket.send(json.dumps({"seq": per_socket, "key": "status", "value": "finished", "timestamp": json.loads(frame_of(0))["timestamp"]}))
        await socket.wait_closed()

    async with websockets.serve(handler, "127.0.0.1", 0, compression=None, max_size=None) as server:
        port = server.sockets[0].getsockname()[1]

        async def go() -> None:
            start.set()

        received = await watched([f"ws://127.0.0.1:{port}/{n}" for n in range(size)], fleets, go, timeout=1800)
    return {"delivered_rate": received["frames"] / (received["last"] - received["first"]),
            "p50_ms": received["p50_ms"], "p99_ms": received["p99_ms"], "load": os.getloadavg()[0]}


# -- report ---------------------------------------------------------------------------------


def table_of(title: str, rows: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> Table:
    table = Table(title=title)
    for column in ("run", "trees finished", "events stored", "stored/s", "delivered/s", "ceiling delivered/s",
                   "p50 / p99 ms", "ceiling p50 / p99 ms", "store p99 ms", "server cores", "server CPU ms/event", "peak RSS MB", "peak fds", "loop lag p99 / max ms", "gc max ms / total s", "load avg"):
        table.add_column(column, justify="left" if column == "run" else "right")
    for name, r, c in rows:
        table.add_row(
            name, f"{r['finished']}/{r['trees']}", f"{r['stored']:,.0f}", f"{r['stored_rate']:,.0f}",
            f"{r['delivered_rate']:,.0f}", f"{c['delivered_rate']:,.0f}" if c else "-",
            f"{r['p50_ms']:.1f} / {r['p99_ms']:.1f}", f"{c['p50_ms']:.1f} / {c['p99_ms']:.1f}" if c else "-",
            f"{r['store_p99_ms']:.1f}", f"{r['cores']:.2f}", f"{r['cpu_ms_per_event']:.2f}", f"{r['rss_mb']:.0f}", str(r["files"]), f"{r['lag_p99_ms']:.0f} / {r['lag_ms']:.0f}", f"{r['gc_ms']:.0f} / {r['gc_total_s']:.1f}", f"{r['load']:.2f}",
        )
    return table


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,500", help="numbers of trees, one run each (SQLite, in-process bus)")
    parser.add_argument("--replica-sizes", default="100,500", help="numbers of trees for one and two replicas (PostgreSQL + Redis)")
    parser.add_argument("--steps", type=int, default=10, help="think calls per sub-agent")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds each model answer takes (0: at once)")
    parser.add_argument("--fleets", type=int, default=2, help="client processes the sockets are spread over")
    parser.add_argument("--nofile", type=int, default=1024, help="soft file descriptor limit of the servers")
    parser.add_argument("--skip-replicas", action="store_true")
    parser.add_argument("--profile", type=Path, help="record each server with py-spy into this folder")
    args = parser.parse_args()
    global PROFILE
    PROFILE = args.profile
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(args.nofile, hard), hard))  # the servers inherit it
    console = Console(width=max(230, Console().width))
    console.log(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, "
                f"{SUBAGENTS} sub-agents x {args.steps} steps a tree, model answers after {args.delay} s, file descriptors {args.nofile}")
    script = tree_script(args.steps, args.delay)
    rows: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for size in [int(s) for s in args.sizes.split(",") if s]:
            console.log(f"SQLite + in-process bus: {size} trees")
            url = f"sqlite:///{folder}/n{size}/taskwire.db"
            result = await with_replicas(folder / f"n{size}", 1, url, None,
                                         lambda replicas: run_trees(replicas, size, script, args.fleets, crossed=False, stagger=args.delay))
            console.log(f"ceiling: {result['frames']:,} frames to {size} sockets")
            rows.append((f"N={size}, one server (SQLite)", result, await ceiling(size, result["frames"], args.fleets)))
            console.log(f"garbage collector, seconds by generation: {result['gc_by_generation']}")
            for error in result["errors"]:
                console.log(f"[red]server log: {error}")
        console.print(table_of("many trees at once, one server (SQLite + in-process bus), forwarding on", rows))
        by_size = {r["trees"]: r for _, r, _ in rows}
        if 10 in by_size and 500 in by_size:
            kept = by_size[500]["delivered_rate"] / by_size[10]["delivered_rate"]
            console.print(f"N=500 delivered rate / N=10: [bold]{kept:.0%}[/bold] (target >= 60 %); "
                          f"N=500 p99 [bold]{by_size[500]['p99_ms']:.1f} ms[/bold] (target < 50 ms)")
        if args.skip_replicas:
            return
        replica_rows: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        for size in [int(s) for s in args.replica_sizes.split(",") if s]:
            for count in (1, 2):
                console.log(f"PostgreSQL + Redis: {count} replica(s), {size} trees")
                async with postgres_schema() as database_url:
                    result = await with_replicas(folder / f"pg{count}-{size}", count, database_url, REDIS,
                                                 lambda replicas: run_trees(replicas, size, script, args.fleets, crossed=count > 1, stagger=args.delay))
                replica_rows.append((f"N={size}, {count} replica{'s, sockets on the other' if count > 1 else ''}", result, {}))
                for error in result["errors"]:
                    console.log(f"[red]server log: {error}")
        console.print(table_of("PostgreSQL + Redis: one replica, then two (each tree's socket on the other replica)", replica_rows))
        for n in range(0, len(replica_rows) - 1, 2):
            one, two = replica_rows[n][1], replica_rows[n + 1][1]
            console.print(f"N={one['trees']}: two replicas deliver [bold]{two['delivered_rate'] / one['delivered_rate']:.2f}x[/bold] "
                          f"one (stored {two['stored_rate'] / one['stored_rate']:.2f}x; target >= 1.6x)")


if __name__ == "__main__":
    asyncio.run(main())
