"""Live under load: what the user behind the N-th conversation waits for.

    .venv/bin/python bench/live.py                            # N = 1, 10, 50, 200, 500; model 0 and 0.2 s
    .venv/bin/python bench/live.py --sizes 50 --delays 0.2 --profile /tmp/prof

N trees are started together, each by its own ``POST /api/conversations`` with ``run: true``
(a main agent with 4 parallel sub-agents of ``--steps`` ``think`` calls then ``finish``, on the
scripted model answering after ``delay`` seconds), each POST followed at once by a socket on its
conversation. The clients live in ``--clients`` processes of their own (``--client`` mode of
this script), so they do not share the server's loop. Printed per (N, delay), every time on the
client's clock from the moment its POST was sent:

- POST -> 201, p50 / p99;
- POST -> the socket's first frame, p50;
- POST -> the first sub-agent event (a frame with a ``subagent_id``), p50 / p99;
- POST -> the run's end (the root's ``status`` ``finished``), p50, beside the model's floor:
  the time its answers alone take along the tree's longest path (2 + steps + 1 answers);
- the server's CPU per model call and per stored event, its RSS at the end and its peak;
- with ``--profile``, a py-spy profile of the server (collapsed stacks) per run, and its top
  frames by own time.

Meanwhile a probe in this process asks the API's other requests of one idle conversation, one
at a time every 0.1 s (a page of its events, a message queued to it, the conversation), their
p50 / p99 beside the same requests on the idle server just before.

The ceilings beside them: the model's floor, N = 1 (a tree alone), and (unless ``--no-ceiling``)
the same clients against a bare Starlette app under uvicorn (``bench/bare_api.py``): what the
machine, uvicorn and the clients cost before taskwire does anything. The clients are aiohttp's
(httpx's connection pool made the client the bottleneck: through it a bare endpoint answered
500 POSTs at p99 2.3 s, through aiohttp 0.1 s). It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import httpx
import websockets
from common import ROOT
from many import SUBAGENTS, cpu_seconds, peak_rss_mb, replica_env, scrape, tree_script
from rich.console import Console
from live_tables import probe_table, table_of
from rich.table import Table

from tests.servers import ServerProcess
from tests.services import free_port


def model_calls(steps: int) -> int:
    """Model answers one tree takes: the main agent's two, each sub-agent's steps and finish."""
    return 2 + SUBAGENTS * (steps + 1)


def rss_mb(server: ServerProcess) -> float:
    assert server.process is not None
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pick(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


# -- the client processes ---------------------------------------------------------------------


async def one_tree(http: aiohttp.ClientSession, ws_url: str, agent: dict[str, Any]) -> dict[str, float]:
    """Create and run one tree, watch it to its end; the times since its POST, in ms."""
    sent = time.perf_counter()
    async with http.post("/api/conversations", json={"agent": agent, "initial_message": "Fan out.", "run": True}) as response:
        response.raise_for_status()
        created_id = (await response.json())["id"]
    created = time.perf_counter()
    out = {"created": (created - sent) * 1000}
    since = lambda: (time.perf_counter() - sent) * 1000  # noqa: E731
    url = f"{ws_url}/sockets/events/{created_id}"
    async with websockets.connect(url, max_size=None, compression=None, open_timeout=600) as socket:
        async for frame in socket:
            now = since()
            out.setdefault("first_frame", now)
            event = json.loads(frame)
            if event.get("subagent_id"):
                out.setdefault("first_subagent", now)
            elif event.get("key") == "status" and event.get("value") in ("finished", "error"):
                out["end"] = now
                out["ok"] = event["value"] == "finished"
                return out
    raise RuntimeError(f"the socket on {url} closed before the run ended")


async def client(url: str, ws_url: str, count: int, agent: dict[str, Any]) -> None:
    """``--client``: say ``ready``, wait for ``go`` on stdin, run ``count`` trees of ``agent`` at
    once, print one JSON line of their times."""
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(url, connector=connector, timeout=aiohttp.ClientTimeout(total=600)) as http:
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        trees = await asyncio.gather(*(one_tree(http, ws_url, agent) for _ in range(count)))
    print(json.dumps(trees), flush=True)


async def clients(server: ServerProcess, size: int, agent_path: Path, processes: int) -> list[dict[str, float]]:
    shares = [size // processes + (1 if n < size % processes else 0) for n in range(processes)]
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable, str(Path(__file__)), "--client", server.url, server.ws_url, str(share), str(agent_path),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 30,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        for share in shares if share
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert (await proc.stdout.readline()).strip() == b"ready"
        for proc in procs:  # as close together as two pipes allow
            assert proc.stdin is not None
            proc.stdin.write(b"go\n")
        await asyncio.gather(*(proc.stdin.drain() for proc in procs if proc.stdin is not None))
        lines = [await asyncio.wait_for(proc.stdout.readline(), 1800) for proc in procs if proc.stdout is not None]
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()
    return [tree for line in lines for tree in json.loads(line)]


# -- the probe: the API's other requests while the trees run ------------------------------------

PROBES = ("page", "message", "get", "answer")
"""What the probe asks, in turn: a page of a conversation's events, a message sent to it (``run:
false``: queued, nothing runs), the conversation itself; and the answer to a permission request
of a second conversation, whose agent asks before every ``think`` (when one is waiting)."""
ASKING = json.dumps({"lanes": [{"name": "main", "turns": [
    {"tool_calls": [{"name": "think", "arguments": {"thought": f"step {n}"}}]} for n in range(200)
]}]})
"""200 asks, then it finishes and the probe starts another (a long script inline would make the
asker's record, rewritten after every model call, a large one)."""


async def probe(url: str, stop: asyncio.Event, every: float = 0.1) -> dict[str, list[float]]:
    """Ask ``PROBES`` of one idle conversation, one after another every ``every`` s until
    ``stop``; each one's latencies in ms."""
    times: dict[str, list[float]] = {name: [] for name in PROBES}
    async with aiohttp.ClientSession(url) as http:
        async with http.post("/api/conversations", json={"initial_message": "Hold on.", "run": False}) as response:
            conversation = (await response.json())["id"]
        asking_agent = {"kind": "native", "llm": {"api": "scripted", "script": ASKING}, "approval": ["think"], "max_iterations": 1000}

        async def new_asker() -> str:
            async with http.post("/api/conversations", json={"agent": asking_agent, "initial_message": "Ask.", "run": True}) as response:
                return (await response.json())["id"]

        asker = await new_asker()
        requests = {
            "page": lambda: http.get(f"/api/conversations/{conversation}/events/search", params={"limit": "20"}),
            "message": lambda: http.post(f"/api/conversations/{conversation}/events", json={"content": "More.", "run": False}),
            "get": lambda: http.get(f"/api/conversations/{conversation}"),
        }
        while not stop.is_set():
            async with http.get(f"/api/conversations/{asker}/permissions") as response:
                waiting = await response.json()
            if waiting:  # else its agent is between two asks, or done
                answer = f"/api/conversations/{asker}/permissions/{waiting[0]['request_id']}"
                requests["answer"] = lambda: http.post(answer, json={"decision": "allow"})
            else:
                async with http.get(f"/api/conversations/{asker}") as response:
                    if (await response.json())["status"] != "running":
                        asker = await new_asker()
            for name in PROBES:
                if name not in requests:
                    continue
                sent = time.perf_counter()
                async with (requests.pop(name) if name == "answer" else requests[name])() as response:
                    await response.read()
                    response.raise_for_status()
                times[name].append((time.perf_counter() - sent) * 1000)
            try:
                await asyncio.wait_for(stop.wait(), every)
            except asyncio.TimeoutError:
                pass
    return times


async def probed(url: str, work: Any) -> tuple[Any, dict[str, list[float]]]:
    """``work``'s result, and the probe's latencies while it ran."""
    stop = asyncio.Event()
    asking = asyncio.create_task(probe(url, stop))
    try:
        result = await work
    finally:
        stop.set()
    return result, await asking


# -- one run ------------------------------------------------------------------------------------


def top_frames(path: Path, count: int = 12) -> list[tuple[str, float]]:
    """The frames where the profile's samples were (own time), as shares of all samples."""
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack:
            continue
        total += int(n)
        own[stack.split(";")[-1]] += int(n)
    return [(frame, n / max(total, 1)) for frame, n in own.most_common(count)]


async def run_one(
    folder: Path, size: int, delay: float, steps: int, processes: int, profile: Path | None, llm: str = "scripted",
    faults: float = 0.0,
) -> dict[str, Any]:
    """One run of ``size`` trees; ``faults``: over HTTP, that share of model requests is answered
    ``429`` with ``Retry-After: 1`` (``random_faults``) and retried."""
    folder.mkdir(parents=True, exist_ok=True)
    env = replica_env(folder, f"sqlite:///{folder}/taskwire.db", None)
    env.update(OH_MAX_PARALLEL_SUBAGENTS=str(SUBAGENTS * max(size, 1)))  # no tree waits for another's slot
    server = ServerProcess("server", folder, env)
    script_path, agent_path = folder / "script.json", folder / "agent.json"
    script = json.loads(tree_script(steps, delay))
    if faults:
        script["random_faults"] = {"share": faults, "status": 429, "retry_after": 1, "seed": size}
    script_path.write_text(json.dumps(script))
    model = None
    if llm == "http":  # the same script served over HTTP (OpenAI's dialect) by `taskwire mock-llm`
        port = free_port()
        model = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "taskwire.cli", "mock-llm", "--script", str(script_path), "--port", str(port),
            cwd=ROOT, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )
        await answers(f"http://127.0.0.1:{port}/health")
        spec = {"api": "openai", "model": "mock", "base_url": f"http://127.0.0.1:{port}/v1", "api_key": "bench"}
    else:
        spec = {"api": "scripted", "script": script_path.read_text()}
    agent_path.write_text(json.dumps({"kind": "native", "llm": spec, "max_iterations": 1000}))
    profiler = None
    try:
        await server.start()
        assert server.process is not None
        _, idle = await probed(server.url, asyncio.sleep(2))  # the same requests on the idle server
        before = await scrape(server)
        cpu_before = cpu_seconds(server)
        model_before = cpu_seconds(SimpleNamespace(process=model)) if model is not None else 0.0  # type: ignore[arg-type]
        if profile is not None:
            profile.mkdir(parents=True, exist_ok=True)
            profiler = await asyncio.create_subprocess_exec(
                str(Path(sys.executable).parent / "py-spy"), "record", "--format", "raw", "--rate", "100", "-o", str(profile / f"n{size}-d{delay}.txt"),
                "-p", str(server.process.pid), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        trees, loaded = await probed(server.url, clients(server, size, agent_path, processes))
        cpu = cpu_seconds(server) - cpu_before
        model_cpu = cpu_seconds(SimpleNamespace(process=model)) - model_before if model is not None else None  # type: ignore[arg-type]
        after = await scrape(server)
        rss_end, rss_peak = rss_mb(server), peak_rss_mb(server)
    finally:
        await server.stop()
        await server.client.aclose()
        if profiler is not None:
            await profiler.wait()
        if model is not None:
            model.terminate()
            await model.wait()
    stored = after.get("taskwire_events_appended_total", 0) - before.get("taskwire_events_appended_total", 0)
    calls = size * model_calls(steps)
    return {
        "trees": size, "delay": delay, "llm": llm, "ok": sum(1 for t in trees if t.get("ok")),
        "created_p50": pick([t["created"] for t in trees], 0.5), "created_p99": pick([t["created"] for t in trees], 0.99),
        "frame_p50": pick([t["first_frame"] for t in trees], 0.5),
        "sub_p50": pick([t["first_subagent"] for t in trees if "first_subagent" in t], 0.5),
        "sub_p99": pick([t["first_subagent"] for t in trees if "first_subagent" in t], 0.99),
        "end_p50": pick([t["end"] for t in trees], 0.5), "floor": delay * (2 + steps + 1) * 1000,
        "end_max": max(t["end"] for t in trees), "faults": faults, "cpu_s": cpu,
        "retries": after.get("taskwire_llm_retries_total", 0) - before.get("taskwire_llm_retries_total", 0),
        "cpu_per_call": cpu * 1000 / calls, "cpu_per_event": cpu * 1000 / max(stored, 1),
        "model_cpu_per_call": model_cpu * 1000 / calls if model_cpu is not None else None,
        "rss_end": rss_end, "rss_peak": rss_peak, "load": os.getloadavg(),
        "profile": top_frames(profile / f"n{size}-d{delay}.txt") if profile is not None else [],
        "probe": {name: (pick(loaded[name], 0.5), pick(loaded[name], 0.99), pick(idle[name], 0.5)) for name in PROBES},
    }


async def answers(url: str) -> None:
    async with httpx.AsyncClient() as http:
        for _ in range(400):
            try:
                await http.get(url)
                return
            except httpx.TransportError:
                await asyncio.sleep(0.05)
    raise RuntimeError(f"nothing answered at {url}")


class BareServer:
    """``bench/bare_api.py`` under uvicorn (its Sans-I/O WebSocket protocol, as ``taskwire serve``
    runs): the ceiling, with the same clients."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.ws_url = f"ws://127.0.0.1:{self.port}"
        self.log_path = folder / "bare.log"
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "uvicorn", "bench.bare_api:app", "--port", str(self.port), "--log-level", "warning",
                "--ws", "websockets-sansio", cwd=ROOT, stdout=log, stderr=asyncio.subprocess.STDOUT,
            )
        await answers(f"{self.url}/sockets")  # any answer (a 404) will do

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            await self.process.wait()


async def run_bare(folder: Path, size: int, processes: int) -> dict[str, Any]:
    """The same N trees' clients against ``BareServer``: POST -> 201 and the socket's frames."""
    folder.mkdir(parents=True, exist_ok=True)
    server = BareServer(folder)
    agent_path = folder / "agent.json"
    agent_path.write_text("{}")
    try:
        await server.start()
        trees = await clients(server, size, agent_path, processes)  # type: ignore[arg-type]
    finally:
        await server.stop()
    return {
        "trees": size, "created_p50": pick([t["created"] for t in trees], 0.5), "created_p99": pick([t["created"] for t in trees], 0.99),
        "frame_p50": pick([t["first_frame"] for t in trees], 0.5), "sub_p50": pick([t["first_subagent"] for t in trees], 0.5),
        "sub_p99": pick([t["first_subagent"] for t in trees], 0.99), "load": os.getloadavg(),
    }


async def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--client":
        url, ws_url, count, agent_path = sys.argv[2:6]
        await client(url, ws_url, int(count), json.loads(Path(agent_path).read_text()))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10,50,200,500", help="numbers of trees started together, one run each")
    parser.add_argument("--delays", default="0,0.2", help="seconds each model answer takes, one run each")
    parser.add_argument("--steps", type=int, default=5, help="think calls per sub-agent")
    parser.add_argument("--clients", type=int, default=2, help="client processes the trees are spread over")
    parser.add_argument("--profile", type=Path, help="record the server with py-spy into this folder")
    parser.add_argument("--no-ceiling", dest="ceiling", action="store_false", help="skip the bare server's run")
    parser.add_argument("--llm", choices=("scripted", "http"), default="scripted",
                        help="the model: scripted in the server, or the same script over HTTP from `taskwire mock-llm`")
    parser.add_argument("--faults", default="0", help="with --llm http: shares of model requests answered 429 "
                        "(Retry-After: 1), one run each")
    args = parser.parse_args()
    console = Console(width=max(200, Console().width))
    console.log(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()}, "
                f"{SUBAGENTS} sub-agents x {args.steps} steps a tree ({model_calls(args.steps)} model calls)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for faults in [float(f) for f in args.faults.split(",") if f]:
            for delay in [float(d) for d in args.delays.split(",") if d]:
                for size in [int(s) for s in args.sizes.split(",") if s]:
                    console.log(f"{size} trees, model {delay} s" + (f", {faults:.0%} of requests answered 429" if faults else ""))
                    rows.append(await run_one(Path(tmp) / f"n{size}-d{delay}-f{faults}", size, delay, args.steps, args.clients,
                                              args.profile, args.llm, faults))
                    for frame, share in rows[-1]["profile"]:
                        console.log(f"  {share:6.1%}  {frame}")
    console.print(table_of(rows, f"live under load: N trees started together (SQLite, one server, model {args.llm})"))
    console.print(probe_table(rows, PROBES))
    if args.ceiling:
        with tempfile.TemporaryDirectory() as tmp:
            bare = [await run_bare(Path(tmp) / f"bare-n{size}", size, args.clients) for size in [int(s) for s in args.sizes.split(",") if s]]
        table = Table(title="the ceiling: the same clients against a bare Starlette app under uvicorn (bench/bare_api.py)")
        for column in ("N", "POST→201 p50 / p99 ms", "→ first frame p50", "→ sub-agent frame p50 / p99", "load 1 / 5 min"):
            table.add_column(column, justify="right")
        for r in bare:
            table.add_row(str(r["trees"]), f"{r['created_p50']:,.0f} / {r['created_p99']:,.0f}", f"{r['frame_p50']:,.0f}",
                          f"{r['sub_p50']:,.0f} / {r['sub_p99']:,.0f}", f"{r['load'][0]:.1f} / {r['load'][1]:.1f}")
        console.print(table)


if __name__ == "__main__":
    asyncio.run(main())
