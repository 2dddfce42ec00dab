"""``session/load`` of a big conversation through ``taskwire acp``, beside the socket's replay.

Loads N tool events (the root and 8 sub-agents, as ``bench/replay.py``) into a SQLite store.
Then, in the same run: the replay of the whole tree over one WebSocket of a server on that
store (client in its own process), and ``taskwire acp`` (embedded, forwarding on) started on
the same store as a new process, answering ``initialize`` and ``session/load`` to a bare client
that reads its stdout lines and counts the ``session/update`` notifications until the load's
answer. Prints events/s for both, updates/s for ACP, and the ACP process's peak memory.

``--forms``: the log also holds each sub-agent's lifecycle (its ``task`` call, started and
finished events), and ``session/load`` runs twice more on it, alternating, to a client that
declares no capability (the flattened form) and to one that declares
``clientCapabilities.subagents`` (child sessions): events/s and the ACP process's CPU time per
event of each, in the same run.

    .venv/bin/python bench/acp_load.py [--events 100000] [--forms]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, SocketClient, isolated_settings, taskwire_server
from replay import load
from rich.console import Console
from rich.table import Table


async def socket_replay(folder: Path, db: Path, root_id: str, count: int) -> dict:
    settings = isolated_settings(folder, database_url=f"sqlite:///{db}", forward_subagent_events=True)
    async with taskwire_server(settings) as server:
        async with SocketClient(f"{server.ws_url}/sockets/events/{root_id}?resend_mode=all", count=count) as client:
            return await client.result(timeout=900)


async def acp_load(folder: Path, db: Path, root_id: str, capabilities: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    env.update(OH_DATABASE_URL=f"sqlite:///{db}", OH_WORKSPACE_PATH=str(folder / "acp"), OH_FORWARD_SUBAGENT_EVENTS="true",
               OH_CONFIG_FILE=str(folder / "none.toml"), OH_IDLE_UNLOAD_SECONDS="0")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "taskwire.cli", "acp", "--log-level", "WARNING", cwd=ROOT, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=64 * 1024 * 1024,
    )
    assert process.stdin is not None and process.stdout is not None

    async def call(request_id: int, method: str, params: dict) -> tuple[int, dict]:
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode() + b"\n")
        updates = 0
        while True:
            line = await process.stdout.readline()
            if not line:
                raise RuntimeError("taskwire acp exited")
            if b'"session/update"' in line:
                updates += 1
                continue
            message = json.loads(line)
            if message.get("id") == request_id:
                if "error" in message:
                    raise RuntimeError(message["error"])
                return updates, message["result"]

    await call(0, "initialize", {"protocolVersion": 1, "clientCapabilities": capabilities or {}})
    cpu_before = _cpu_seconds(process.pid)
    started = time.perf_counter()
    updates, _ = await call(1, "session/load", {"sessionId": root_id, "cwd": str(folder), "mcpServers": []})
    elapsed = time.perf_counter() - started
    cpu = _cpu_seconds(process.pid) - cpu_before
    peak = _peak_rss_mb(process.pid)
    process.stdin.close()
    await process.wait()
    return {"updates": updates, "seconds": elapsed, "peak_mb": peak, "cpu": cpu}


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of the process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--forms", action="store_true", help="compare the flattened form with child sessions")
    parser.add_argument("--rounds", type=int, default=2, help="alternating loads of each form, with --forms")
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = folder / "bench.db"
        started = time.perf_counter()
        root_id = await load(db, args.events, lifecycle=args.forms)
        total = args.events + (4 * 8 if args.forms else 0)
        console.print(f"loaded {total:,} events in {time.perf_counter() - started:.1f} s")
        socket = await socket_replay(folder, db, root_id, total)
        acp = await acp_load(folder, db, root_id)
        forms: dict[str, list[dict]] = {"flattened": [], "child sessions": []}
        for _ in range(args.rounds if args.forms else 0):
            forms["flattened"].append(await acp_load(folder, db, root_id))
            forms["child sessions"].append(await acp_load(folder, db, root_id, {"subagents": {}}))
    table = Table(title=f"session/load of {args.events:,} events (root + 8 sub-agents)")
    for column in ("measure", "value"):
        table.add_column(column, justify="right" if column == "value" else "left")
    table.add_row("socket replay, whole tree (ceiling)", f"{socket['frames'] / socket['seconds']:,.0f} events/s")
    table.add_row("taskwire acp session/load", f"{args.events / acp['seconds']:,.0f} events/s")
    table.add_row("  session/update notifications", f"{acp['updates']:,} ({acp['updates'] / acp['seconds']:,.0f}/s)")
    table.add_row("  taskwire acp peak RSS", f"{acp['peak_mb']:.0f} MB")
    for name, runs in forms.items():
        best = min(runs, key=lambda r: r["seconds"])
        table.add_row(f"{name}: session/load (best of {len(runs)})",
                      f"{total / best['seconds']:,.0f} events/s, {best['updates']:,} updates")
        table.add_row(f"  {name}: CPU per event (mean)",
                      f"{sum(r['cpu'] for r in runs) / len(runs) / total * 1e6:,.1f} µs")
    console.print(table)
    console.print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    asyncio.run(main())
