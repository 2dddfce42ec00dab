"""Hours, not minutes: steady load for a long time, memory sampled, growth judged once warm.

    .venv/bin/python bench/soak.py [--minutes 60] [--unload 600] [--trees 8] [--k 4] [--m 5] [--delay 0.05]

``taskwire serve`` (SQLite, forwarding on, ``OH_IDLE_UNLOAD_SECONDS=--unload``) and
``taskwire mock-llm`` (OpenAI dialect over HTTP, every answer ``--delay`` s late) each run as
their own process. ``--trees`` clients each start a tree, follow it on its socket to its end
and start the next, for ``--minutes``: a tree is a main agent whose first answer is ``--k``
parallel ``task`` calls, each sub-agent ``--m`` ``think`` steps (``bench/peers/trees.py``).
Every ``--sample`` s the server's and the model's resident memory, open files and threads are
read from ``/proc``, beside the trees done and the roots the server holds in memory.

It prints the samples, then the growth over the last half of the run (the first half warms
up: caches fill, roots reach their unload age), the memory each tree added over that half,
trees done, errors and a verdict: ``flat`` when the server grew under ``--limit`` % (5) over
the last half and no tree failed. ``--samples FILE`` writes every sample as JSON lines. It
asserts nothing; the load average is printed beside every sample (the machine is shared).
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
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "peers"))
sys.path.insert(0, str(HERE.parent))

import httpx  # noqa: E402

import servers  # noqa: E402
import tree_clients as tc  # noqa: E402
import trees  # noqa: E402


@dataclass
class Sample:
    """One reading of both processes, ``t`` seconds into the run."""

    t: float
    trees: int
    errors: int
    loaded: int
    """Root conversations the server holds in memory (``/server_info``)."""
    rss: float
    fds: int
    threads: int
    model_rss: float
    model_fds: int
    model_threads: int
    load: float


def process_stats(pid: int) -> tuple[float, int, int]:
    """Resident MB, open files and threads of one process (its children not included)."""
    rss, threads = 0.0, 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) / 1024
        elif line.startswith("Threads:"):
            threads = int(line.split()[1])
    return rss, len(os.listdir(f"/proc/{pid}/fd")), threads


def growth(samples: list[Sample], limit: float = 5.0) -> dict[str, Any]:
    """What the last half of the run says: the server's RSS at its start and end (each the
    median of the few samples around it, so one garbage collection does not decide), the growth
    in %, KB per tree over that half, and the verdict (``flat`` under ``limit`` %)."""
    if len(samples) < 6:
        return {"verdict": "too short", "growth_pct": None}
    half = samples[-1].t / 2
    last = [s for s in samples if s.t >= half]
    edge = max(3, len(last) // 10)
    start, end = last[:edge], last[-edge:]
    rss_start = statistics.median(s.rss for s in start)
    rss_end = statistics.median(s.rss for s in end)
    trees_added = statistics.median(s.trees for s in end) - statistics.median(s.trees for s in start)
    pct = (rss_end - rss_start) / rss_start * 100
    per_tree = (rss_end - rss_start) * 1024 / trees_added if trees_added > 0 else None
    errors = samples[-1].errors
    verdict = "flat" if pct < limit and errors == 0 else ("errors" if errors else "growing")
    return {"rss_start": rss_start, "rss_end": rss_end, "growth_pct": pct, "kb_per_tree": per_tree,
            "trees": samples[-1].trees, "errors": errors, "fds": (start[0].fds, end[-1].fds),
            "threads": (start[0].threads, end[-1].threads), "model_rss": (start[0].model_rss, end[-1].model_rss),
            "verdict": verdict}


async def _root_statuses(client: httpx.AsyncClient) -> Counter[str]:
    statuses: Counter[str] = Counter()
    for status in ("idle", "running", "paused", "finished", "error"):
        statuses[status] = (await client.get("/api/conversations/count", params={"status": status})).json()
    return +statuses


class Load:
    """``trees`` clients, each starting a tree, following it to its end, starting the next."""

    def __init__(self, client: httpx.AsyncClient, ws: str, model_url: str) -> None:
        self.client, self.ws, self.model_url = client, ws, model_url
        self.done = 0
        self.errors = 0
        self.kinds: Counter[str] = Counter()
        """What the failures were: a tree that ended otherwise, or the client's own trouble."""

    async def client_loop(self, until: float) -> None:
        while time.perf_counter() < until:
            try:
                tree = await asyncio.wait_for(tc.taskwire_tree(self.client, self.ws, self.model_url), 300)
                status = next((e["value"] for e in reversed(tree.events) if tc._ends_root(e)), None)
                if status != "finished":
                    raise RuntimeError(f"tree ended {status!r}")
                self.done += 1
            except Exception as exc:  # counted and shown; the soak goes on
                self.errors += 1
                self.kinds[repr(exc)[:200]] += 1
                await asyncio.sleep(1)


async def soak(args: argparse.Namespace, folder: Path) -> list[Sample]:
    script = folder / "script.json"
    script.write_text(json.dumps(trees.script("taskwire", args.k, args.m, args.delay)))
    margv, menv, mport = servers.mock_llm(script)
    model_url = f"http://127.0.0.1:{mport}/v1"
    argv, env, port = servers.taskwire_tree_server(folder / "taskwire.db", folder, args.k)
    env["OH_IDLE_UNLOAD_SECONDS"] = str(args.unload)
    env["OH_LOG_LEVEL"] = "WARNING"
    samples: list[Sample] = []
    async with servers.running(margv, menv, servers.ROOT, mport, folder / "mock.log") as model, \
            servers.running(argv, env, servers.ROOT, port, folder / "server.log") as server:
        # Idle connections dropped well before uvicorn's 5 s keep-alive: a request sent on one the
        # server is closing fails with a ReadError that is the client's, not the server's.
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None, keepalive_expiry=1)
        async with httpx.AsyncClient(base_url=server.base, timeout=120, limits=limits) as client:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{mport}") as probe:
                await servers.wait_ready(probe, "/script/status", model, "mock-llm")
            await servers.wait_ready(client, "/alive", server, "taskwire")
            load = Load(client, server.base.replace("http", "ws", 1), model_url)
            began = time.perf_counter()
            until = began + args.minutes * 60
            clients = [asyncio.create_task(load.client_loop(until)) for _ in range(args.trees)]
            print(f"{'t s':>6} {'trees':>6} {'err':>4} {'loaded':>6} {'RSS MB':>7} {'fds':>5} {'thr':>4} "
                  f"{'model MB':>8} {'mfds':>5} {'mthr':>4} {'load':>5}", flush=True)
            try:
                while True:
                    info = (await client.get("/server_info")).json()
                    rss, fds, threads = process_stats(server.proc.pid)
                    mrss, mfds, mthreads = process_stats(model.proc.pid)
                    sample = Sample(time.perf_counter() - began, load.done, load.errors, info.get("loaded_conversations", -1),
                                    rss, fds, threads, mrss, mfds, mthreads, os.getloadavg()[0])
                    samples.append(sample)
                    print(f"{sample.t:6.0f} {sample.trees:6d} {sample.errors:4d} {sample.loaded:6d} {rss:7.1f} {fds:5d} "
                          f"{threads:4d} {mrss:8.1f} {mfds:5d} {mthreads:4d} {sample.load:5.2f}", flush=True)
                    if args.samples:
                        with open(args.samples, "a") as out:
                            out.write(json.dumps(asdict(sample)) + "\n")
                    if all(c.done() for c in clients):
                        break
                    await asyncio.sleep(args.sample)
            finally:
                for c in clients:
                    c.cancel()
                await asyncio.gather(*clients, return_exceptions=True)
            for error, count in load.kinds.most_common():
                print(f"error x{count}: {error}")
            # Whether failed clients' trees failed too, or only the client (a socket that could not
            # open on a loaded machine): what the store says of every root.
            statuses = await _root_statuses(client)
            print("roots by status in the store: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
    return samples


def report(samples: list[Sample], args: argparse.Namespace) -> dict[str, Any]:
    result = growth(samples, args.limit)
    if result["growth_pct"] is None:
        print(f"verdict: {result['verdict']} ({len(samples)} samples)")
        return result
    kb = result["kb_per_tree"]
    print(f"\nOH_IDLE_UNLOAD_SECONDS={args.unload:g}, {args.minutes:g} min, {args.trees} trees at a time "
          f"(1 + {args.k} agents, {args.m} steps, {args.delay * 1000:.0f} ms a model step)")
    print(f"server RSS over the last half: {result['rss_start']:.1f} -> {result['rss_end']:.1f} MB "
          f"({result['growth_pct']:+.1f} %, ceiling {args.limit:g} %), "
          f"{'n/a' if kb is None else f'{kb:.2f}'} KB a tree; peak {max(s.rss for s in samples):.1f} MB")
    print(f"open files {result['fds'][0]} -> {result['fds'][1]}, threads {result['threads'][0]} -> {result['threads'][1]}, "
          f"model RSS {result['model_rss'][0]:.1f} -> {result['model_rss'][1]:.1f} MB")
    print(f"trees done {result['trees']}, errors {result['errors']}, load average {os.getloadavg()[0]:.2f}")
    print(f"verdict: {result['verdict']}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--unload", type=float, default=600, help="OH_IDLE_UNLOAD_SECONDS")
    parser.add_argument("--trees", type=int, default=8, help="trees at a time")
    parser.add_argument("--k", type=int, default=4, help="sub-agents a tree")
    parser.add_argument("--m", type=int, default=5, help="steps a sub-agent")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds a model answer takes")
    parser.add_argument("--sample", type=float, default=5, help="seconds between samples")
    parser.add_argument("--limit", type=float, default=5, help="growth ceiling over the last half, %%")
    parser.add_argument("--samples", help="append every sample to this file (JSON lines)")
    parser.add_argument("--keep", help="run in this folder and keep it (logs, database)")
    args = parser.parse_args()
    if args.keep:
        Path(args.keep).mkdir(parents=True, exist_ok=True)
        samples = asyncio.run(soak(args, Path(args.keep)))
    else:
        with tempfile.TemporaryDirectory(prefix="taskwire-soak-") as folder:
            samples = asyncio.run(soak(args, Path(folder)))
    report(samples, args)


if __name__ == "__main__":
    main()
