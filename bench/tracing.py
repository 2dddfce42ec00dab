"""What tracing costs the parent: the same fan-out run with tracing off and on.

8 parallel sub-agents x 200 tool steps with the scripted LLM (``bench/forwarding.py``'s run),
forwarding off, with and without spans exported over OTLP/HTTP to a receiver in another process
(which parses what it got only when asked, after the runs). Interleaved runs; the parent's wall time
in each case (target ratio <= 1.05), and how many spans reached the receiver.

    .venv/bin/python bench/tracing.py [--subagents 8] [--steps 200] [--repeat 7]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from common import ROOT, isolated_settings, rss_mb, taskwire_server
from forwarding import fanout_script
from rich.console import Console
from rich.table import Table

from tests.services import free_port

RECEIVER = """
import sys, uvicorn
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

bodies = []  # parsed only when counted, so the receiver takes no CPU from the runs it measures

async def traces(request):
    bodies.append(await request.body())
    return Response(b"", media_type="application/x-protobuf")

async def count(request):
    requests = [ExportTraceServiceRequest.FromString(body) for body in bodies]
    return JSONResponse(sum(len(s.spans) for r in requests for rs in r.resource_spans for s in rs.scope_spans))

app = Starlette(routes=[Route("/v1/traces", traces, methods=["POST"]), Route("/count", count)])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


async def fanout_run(folder: Path, tracing: bool, script: str, subagents: int, receiver: str) -> dict:
    settings = isolated_settings(folder, tracing=tracing, max_parallel_subagents=subagents)
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver  # read when the server starts
    try:
        async with taskwire_server(settings) as server:
            agent = {"kind": "native", "llm": {"api": "scripted", "script": script}, "max_iterations": 1000}
            record = await server.runtime.create(agent, initial_message="Fan out.", run=False)
            started, cpu = time.perf_counter(), time.process_time()
            await server.runtime.run(record.id)
            await server.runtime.wait(record.id, timeout=600)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
            stored = await server.runtime.store.last_seq(record.id)
            tracer = server.app.state.tracer
        exported = tracer.spans_exported if tracer else 0
        dropped = tracer.spans_dropped + tracer.records_dropped if tracer else 0
    finally:
        del os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"]
    return {"wall": wall, "cpu": cpu, "stored": stored, "exported": exported, "dropped": dropped}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--subagents", type=int, default=8)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    script = fanout_script(args.subagents, args.steps)
    port = free_port()
    receiver = await asyncio.create_subprocess_exec(sys.executable, "-c", RECEIVER, str(port), env={**os.environ, "PYTHONPATH": str(ROOT)})
    url = f"http://127.0.0.1:{port}"
    runs: dict[bool, list[dict]] = {False: [], True: []}
    try:
        async with httpx.AsyncClient(base_url=url) as client:
            for _ in range(200):
                try:
                    await client.get("/count")
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)
            with tempfile.TemporaryDirectory() as tmp:
                for n in range(args.repeat):
                    for flag in (False, True):  # interleaved, so machine noise hits both alike
                        folder = Path(tmp) / f"{flag}-{n}"
                        folder.mkdir()
                        runs[flag].append(await fanout_run(folder, flag, script, args.subagents, url))
            received = (await client.get("/count")).json()
    finally:
        receiver.terminate()
        await receiver.wait()
    off = statistics.median(r["wall"] for r in runs[False])
    on = statistics.median(r["wall"] for r in runs[True])
    console = Console()
    table = Table(title=f"tracing: {args.subagents} parallel sub-agents x {args.steps} tool steps (median of {args.repeat})")
    table.add_column("measure")
    table.add_column("tracing off", justify="right")
    table.add_column("tracing on", justify="right")
    table.add_row("parent wall time, s", f"{off:.2f}", f"{on:.2f}")
    cpu_off = statistics.median(r["cpu"] for r in runs[False])
    cpu_on = statistics.median(r["cpu"] for r in runs[True])
    table.add_row("server process CPU during the run, s", f"{cpu_off:.2f}", f"{cpu_on:.2f}")
    table.add_row("events stored (tree)", str(runs[False][0]["stored"]), str(runs[True][0]["stored"]))
    table.add_row("spans exported per run", "-", str(runs[True][0]["exported"]))
    table.add_row("spans or records dropped (all runs)", "-", str(sum(r["dropped"] for r in runs[True])))
    table.add_row("spans the receiver got (all runs)", "-", str(received))
    console.print(table)
    console.print(f"wall-time ratio on/off: [bold]{on / off:.3f}[/bold] (target <= 1.05); CPU ratio {cpu_on / cpu_off:.3f}")
    console.print(f"peak RSS of the server process: {rss_mb():.0f} MB")


if __name__ == "__main__":
    asyncio.run(main())
