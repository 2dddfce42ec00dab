"""The second peer: LangGraph's Agent Server (in-memory runtime) running a deepagents agent, beside taskwire.

    make bench-peers PEERS=langgraph
    .venv/bin/python bench/peers/langgraph.py [--sizes 10,50] [--k 4] [--m 5] [--delay 0.2] [--rounds 2]

Installs the peer (langgraph-api 0.16.7, langgraph-runtime-inmem 0.36.7, deepagents 0.7.32) into
its own Python 3.12 venv from ``langgraph-requirements.txt`` (a skip, with the reason, when there
is no Python 3.12). Both servers run the same tree (``trees.py``): a main agent with ``k``
parallel sub-agents of ``m`` ``think`` calls each, on one ``taskwire mock-llm`` per run (its
own process) whose every answer waits ``delay`` s. Peer and taskwire in turn, each round a new
process of each (the load average printed beside each): one tree alone, then N trees at once
for each N: POST → first sub-agent event and → run end (p50, max), tool calls a second, the
server's CPU seconds and RSS. In the first round only: how many sub-agent events name their
spawning call without a client-side join; a client dropping its stream at ten points and
reconnecting (events lost, duplicated); one call's sub-agent events and a word among them over
REST. The peer runs ``N_JOBS_PER_WORKER`` = the largest N (its default runs one run at a time).
It prints figures; it asserts nothing.
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
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import httpx  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import peer_setup  # noqa: E402
import servers  # noqa: E402
import tree_clients as tc  # noqa: E402
import trees  # noqa: E402

console = Console(width=200)
VENV = HERE / ".venv-langgraph"
LOCK = HERE / "langgraph-requirements.txt"
PEER = "the LangGraph Agent Server (langgraph-api 0.16.7, deepagents 0.7.32)"
APP = HERE / "langgraph_app"
SIDES = ("LangGraph", "taskwire")


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _summary(batch: list[tc.Tree], wall: float, calls: int) -> dict[str, float]:
    first = [t.first_subagent * 1000 for t in batch]
    end = [t.end * 1000 for t in batch]
    return {"first_p50": statistics.median(first), "first_max": max(first), "end_p50": statistics.median(end),
            "end_max": max(end), "calls_per_s": calls * len(batch) / wall, "wall": wall}


async def measure_side(side: str, python: Path, folder: Path, args: argparse.Namespace, extras: bool) -> dict[str, Any]:
    """One process of ``side`` (and its own mock model): every size, and the extras if asked."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "script.json"
    script.write_text(json.dumps(trees.script("langgraph" if side == "LangGraph" else "taskwire", args.k, args.m, args.delay)))
    margv, menv, mport = servers.mock_llm(script)
    model_url = f"http://127.0.0.1:{mport}/v1"
    if side == "LangGraph":
        argv, env, port = servers.langgraph_server(python, APP, model_url, max(args.sizes))
        cwd, ready = folder, "/ok"  # its thread and run pickles (written whatever the setting) land here
    else:
        argv, env, port = servers.taskwire_tree_server(folder / "taskwire.db", folder, args.k)
        cwd, ready = servers.ROOT, "/alive"
    figures: dict[str, Any] = {}
    calls = trees.tool_calls(args.k, args.m)
    async with servers.running(margv, menv, servers.ROOT, mport, folder / "mock.log") as mock, \
            servers.running(argv, env, cwd, port, folder / "server.log") as server:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
        async with httpx.AsyncClient(base_url=server.base, timeout=600, limits=limits) as client:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{mport}") as probe:
                await servers.wait_ready(probe, "/script/status", mock, "mock-llm")
            await servers.wait_ready(client, ready, server, side)
            figures["rss_idle"] = server.memory()["rss"]
            ws = server.base.replace("http", "ws", 1)

            async def tree() -> tc.Tree:
                return await (tc.langgraph_tree(client) if side == "LangGraph" else tc.taskwire_tree(client, ws, model_url))

            for size in [1, *args.sizes]:
                cpu = servers.cpu_seconds(server.proc.pid)
                began = time.perf_counter()
                batch = await asyncio.gather(*(tree() for _ in range(size)))
                wall = time.perf_counter() - began
                figures[size] = {**_summary(batch, wall, calls), "cpu": servers.cpu_seconds(server.proc.pid) - cpu,
                                 "rss": server.memory()["rss"]}
                if size == 1:
                    one = batch[0]
            if extras:
                figures["extras"] = await _extras(side, client, ws, model_url, one)
    return figures


async def _extras(side: str, client: httpx.AsyncClient, ws: str, model_url: str, one: tc.Tree) -> dict[str, Any]:
    extras: dict[str, Any] = {}
    call = trees.call_id(1)
    if side == "taskwire":
        extras["attribution"] = trees.taskwire_attribution(one.events)
        stored = len(await tc.taskwire_stored(ws, one.ids["conversation"]))
        extras["resume"] = {"after_seq": await tc.taskwire_dropping(client, ws, model_url, trees.drop_points(stored))}
        extras["search"] = await tc.taskwire_search(client, one.ids["conversation"], call)
        return extras
    extras["attribution"] = trees.v1_attribution((name, data) for name, data, _ in one.events)
    v2 = await tc.langgraph_v2_tree(client)
    extras["attribution_v2"] = trees.v2_attribution(v2.events)
    extras["resume"] = {"Last-Event-ID (v1)": await tc.v1_dropping(client, trees.drop_points(len(one.events))),
                        "since (v2)": await tc.v2_dropping(client, trees.drop_points(len(v2.events)))}
    extras["search"] = await tc.langgraph_search(client, one.ids["thread"], call)
    return extras


def report(runs: list[tuple[str, dict[str, Any], str, str]], args: argparse.Namespace) -> None:
    title = (f"each run, in the order run: trees of 1 main agent + {args.k} sub-agents x {args.m} think calls, "
             f"model delay {args.delay * 1000:.0f} ms (floor of one tree: {(args.m + 3) * args.delay * 1000:.0f} ms)")
    table = Table(title=title)
    table.add_column("N / measure")
    for n, (side, _, before, after) in enumerate(runs, 1):
        table.add_column(f"{n}. {side}\nload {before}\n→ {after}", justify="right")
    for size in [1, *args.sizes]:
        for label, key, fmt in (("POST → first sub-agent event p50, ms", "first_p50", "{:,.0f}"),
                                ("… max, ms", "first_max", "{:,.0f}"), ("POST → run end p50, ms", "end_p50", "{:,.0f}"),
                                ("… max, ms", "end_max", "{:,.0f}"), ("tool calls / s", "calls_per_s", "{:,.0f}"),
                                ("server CPU, s", "cpu", "{:.1f}"), ("server RSS after, MB", "rss", "{:,.0f}")):
            table.add_row(f"N={size}: {label}", *(fmt.format(f[size][key]) for _, f, _, _ in runs))
    table.add_row("server RSS idle, MB", *(f"{f['rss_idle']:,.0f}" for _, f, _, _ in runs))
    console.print(table)
    medians = Table(title="medians of the runs above")
    for column in ("measure", *SIDES):
        medians.add_column(column, justify="left" if column == "measure" else "right")
    for size in [1, *args.sizes]:
        for label, key in (("first sub-agent event p50, ms", "first_p50"), ("run end p50, ms", "end_p50"),
                           ("tool calls / s", "calls_per_s"), ("server CPU, s", "cpu"), ("RSS after, MB", "rss")):
            medians.add_row(f"N={size}: {label}", *(f"{statistics.median(f[size][key] for s, f, _, _ in runs if s == side):,.1f}"
                                                     for side in SIDES))
    console.print(medians)
    for side, figures, _, _ in runs:
        if "extras" in figures:
            console.print(f"[bold]{side}[/bold]: " + json.dumps(figures["extras"], indent=1, default=str))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[10, 50])
    parser.add_argument("--k", type=int, default=4, help="parallel sub-agents a tree")
    parser.add_argument("--m", type=int, default=5, help="think calls a sub-agent")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds every model answer waits")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of (peer, taskwire)")
    parser.add_argument("--venv", type=Path, default=VENV, help="the peer's venv (made if missing)")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args()
    try:
        python = peer_setup.peer_python(args.venv, LOCK, PEER)
    except peer_setup.Skip as skip:
        console.print(str(skip))
        return
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-langgraph-") as tmp:
        for round_ in range(args.rounds):
            for side in SIDES:
                before = _load()
                figures = await measure_side(side, python, Path(tmp) / f"{round_}-{side}", args, extras=round_ == 0)
                runs.append((side, figures, before, _load()))
                console.print(f"round {round_ + 1}, {side}: N={max(args.sizes)} first sub-agent p50 "
                              f"{figures[max(args.sizes)]['first_p50']:,.0f} ms (load {before} → {runs[-1][3]})")
    report(runs, args)
    if args.json:
        args.json.write_text(json.dumps([{"side": s, "load": [b, a], **{str(k): v for k, v in f.items()}} for s, f, b, a in runs],
                                        indent=1, default=str))


if __name__ == "__main__":
    asyncio.run(main())
