"""What one request costs the server: ``POST /api/conversations`` three ways, beside the floor.

    .venv/bin/python bench/post_cost.py                 # 300 requests each

One ``taskwire serve`` (SQLite, forwarding on), one client sending one request at a time, so
each figure is the request alone: its latency p50, and the server process's CPU (user +
system, all its threads) divided by the requests. The three POSTs: a conversation with nothing
(``idle``), with a message and ``run: false``, and with a message that starts a run (its start
included; the scripted model then waits 30 s, so no model call is counted). The floor beside
them, through the same middleware: ``GET /health`` (no store) and ``GET /api/conversations/count``
(one read). It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from common import ROOT  # noqa: F401  (puts the repository on sys.path)
from many import cpu_seconds, replica_env, tree_script
from rich.console import Console
from rich.table import Table

from tests.servers import ServerProcess


async def timed(http: aiohttp.ClientSession, count: int, method: str, path: str, body: Any = None) -> list[float]:
    times = []
    for _ in range(count):
        sent = time.perf_counter()
        async with http.request(method, path, json=body) as response:
            await response.read()
            response.raise_for_status()
        times.append((time.perf_counter() - sent) * 1000)
    return sorted(times)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300, help="requests of each kind")
    args = parser.parse_args()
    agent = {"kind": "native", "llm": {"api": "scripted", "script": tree_script(5, 30.0)}, "max_iterations": 1000}
    kinds = {
        "GET /health": ("GET", "/health", None),
        "GET /api/conversations/count": ("GET", "/api/conversations/count", None),
        "POST, nothing (idle)": ("POST", "/api/conversations", {"agent": agent}),
        "POST, a message, run false": ("POST", "/api/conversations", {"agent": agent, "initial_message": "Hi.", "run": False}),
        "POST, a message, run (its start)": ("POST", "/api/conversations", {"agent": agent, "initial_message": "Hi.", "run": True}),
    }
    console = Console(width=max(140, Console().width))
    table = Table(title=f"one request at a time, {args.count} of each (load average {os.getloadavg()[0]:.1f})")
    for column in ("request", "latency p50 ms", "server CPU ms / request"):
        table.add_column(column, justify="right")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server = ServerProcess("server", folder, replica_env(folder, f"sqlite:///{folder}/taskwire.db", None))
        await server.start()
        try:
            async with aiohttp.ClientSession(server.url) as http:
                await timed(http, 20, *kinds["POST, a message, run (its start)"])  # warm
                for name, (method, path, body) in kinds.items():
                    before = cpu_seconds(server)
                    times = await timed(http, args.count, method, path, body)
                    cpu = (cpu_seconds(server) - before) * 1000 / args.count
                    table.add_row(name, f"{times[len(times) // 2]:.2f}", f"{cpu:.2f}")
        finally:
            await server.stop()
            await server.client.aclose()
    console.print(table)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
