"""What forwarding costs, and how fast forwarded events reach a socket.

8 parallel sub-agents x 200 tool steps with the scripted LLM, run with forwarding off and on
while a socket client (another process) watches the root: the parent's wall time in each case
(target ratio <= 1.05) and the events per second the client received. Then forwarded events
emitted at 1,000 events/s: emit-to-client latency p50/p99 (target p99 <= 5 ms).

    .venv/bin/python bench/forwarding.py [--subagents 8] [--steps 200] [--repeat 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from common import SocketClient, isolated_settings, paced_emit, rss_mb, taskwire_server
from rich.console import Console
from rich.table import Table


def fanout_script(subagents: int, steps: int) -> str:
    lanes = []
    for i in range(subagents):
        turns = [{"tool_calls": [{"name": "think", "arguments": {"thought": f"sub-agent {i} step {k}"}}]} for k in range(steps)]
        turns.append({"tool_calls": [{"name": "finish", "arguments": {"message": f"sub-agent {i} done"}}]})
        lanes.append({"name": f"sub{i}", "match": {"first_user_ends_with": f"Sub-agent {i} work."}, "turns": turns})
    calls = [{"name": "task", "arguments": {"description": f"part {i}", "prompt": f"Sub-agent {i} work."}} for i in range(subagents)]
    lanes.append({"name": "main", "turns": [{"tool_calls": calls}, {"tool_calls": [{"name": "finish", "arguments": {"message": "all done"}}]}]})
    return json.dumps({"lanes": lanes, "usage": {"input_tokens": 10, "output_tokens": 5}})


async def fanout_run(folder: Path, forwarding: bool, script: str, subagents: int) -> dict:
    settings = isolated_settings(folder, forward_subagent_events=forwarding, max_parallel_subagents=subagents)
    async with taskwire_server(settings) as server:
        agent = {"kind": "native", "llm": {"api": "scripted", "script": script}, "max_iterations": 1000}
        record = await server.runtime.create(agent, initial_message="Fan out.", run=False)
        url = f"{server.ws_url}/sockets/events/{record.id}"
        async with SocketClient(url, until_finished=True) as client:
            started = time.perf_counter()
            await server.runtime.run(record.id)
            await server.runtime.wait(record.id, timeout=600)
            wall = time.perf_counter() - started
            received = await client.result()
        stored = await server.runtime.store.last_seq(record.id)
    return {"wall": wall, "frames": received["frames"], "seconds": received["seconds"], "stored": stored}


async def forwarded_latency(folder: Path, count: int, rate: float) -> dict:
    settings = isolated_settings(folder, forward_subagent_events=True)
    async with taskwire_server(settings) as server:
        record = await server.runtime.create({"kind": "native"}, run=False)
        root = await server.runtime.host(record.id)
        child = await root.start_subagent("call_bench", subagent_type="general-purpose", description="latency")
        async with SocketClient(f"{server.ws_url}/sockets/events/{record.id}?resend_mode=since&after_seq=1000000000",
                                count=count, latency=True) as client:
            await paced_emit(child.emit, count, rate)
            return await client.result()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--subagents", type=int, default=8)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--latency-events", type=int, default=5000)
    args = parser.parse_args()
    script = fanout_script(args.subagents, args.steps)
    runs: dict[bool, list[dict]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(args.repeat):
            for flag in (False, True):  # interleaved, so machine noise hits both alike
                folder = Path(tmp) / f"{flag}-{n}"
                folder.mkdir()
                runs[flag].append(await fanout_run(folder, flag, script, args.subagents))
        latency_dir = Path(tmp) / "latency"
        latency_dir.mkdir()
        latency = await forwarded_latency(latency_dir, args.latency_events, 1000.0)
    off = statistics.median(r["wall"] for r in runs[False])
    on = statistics.median(r["wall"] for r in runs[True])
    console = Console()
    table = Table(title=f"forwarding: {args.subagents} parallel sub-agents x {args.steps} tool steps (median of {args.repeat})")
    table.add_column("measure")
    table.add_column("forwarding off", justify="right")
    table.add_column("forwarding on", justify="right")
    table.add_row("parent wall time, s", f"{off:.2f}", f"{on:.2f}")
    table.add_row("events stored (tree)", str(runs[False][0]["stored"]), str(runs[True][0]["stored"]))
    table.add_row("frames the root's socket received", str(runs[False][0]["frames"]), str(runs[True][0]["frames"]))
    rate_on = statistics.median(r["frames"] / r["seconds"] for r in runs[True] if r["seconds"])
    table.add_row("socket events/s during the run", "-", f"{rate_on:,.0f}")
    console.print(table)
    console.print(f"wall-time ratio on/off: [bold]{on / off:.3f}[/bold] (target <= 1.05)")
    console.print(
        f"forwarded events at 1,000/s, emit-to-client latency: p50 {latency['p50_ms']:.2f} ms, "
        f"p99 [bold]{latency['p99_ms']:.2f} ms[/bold] over {latency['frames']} events (target p99 <= 5 ms)"
    )
    console.print(f"peak RSS of the server process: {rss_mb():.0f} MB")


if __name__ == "__main__":
    asyncio.run(main())
