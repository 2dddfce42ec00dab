"""AG-UI over SSE beside the WebSocket: the replay of one log, both ways, in the same run.

Loads N events (default 100,000, the log of ``bench/replay.py``: a root and 8 sub-agents, tool
calls and results) into SQLite, ends the root's run, starts ``taskwire serve`` on it (forwarding
on) and replays the whole tree, alternating, over one WebSocket (``resend_mode=all``) and over
``GET /agui/{id}?until=idle`` (each client in its own process). Next to them: the projection
alone (records -> AG-UI frames -> SSE bytes, in this process, no I/O), the part of the SSE
cost the WebSocket does not pay.

    .venv/bin/python bench/agui.py [--events 100000] [--rounds 3]
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

import httpx
from common import ROOT, SocketClient
from replay import load
from rich.console import Console
from rich.table import Table

from taskwire.agui import AguiProjection, SubagentInfo, encode_frames
from taskwire.events import ConversationStateUpdateEvent
from taskwire.store import EventQuery
from taskwire.store.sqlite import SQLiteStore


async def end_the_run(db: Path, root_id: str) -> None:
    """The root's final status: what ends an AG-UI run (and the ``until=idle`` stream)."""
    store = SQLiteStore(f"sqlite:///{db}")
    await store.open()
    await store.append(root_id, root_id, ConversationStateUpdateEvent(key="status", value="finished"))
    await store.close()


async def projection_alone(db: Path, root_id: str) -> dict:
    """Records read from the store beforehand, then projected and framed: the added CPU."""
    store = SQLiteStore(f"sqlite:///{db}")
    await store.open()
    tree = [SubagentInfo.from_conversation(r) for r in await store.tree(root_id) if not r.is_root]
    records, page_id = [], None
    while True:
        page = await store.search(EventQuery(root_id), page_id=page_id)
        records += [r.json for r in page.items]
        page_id = page.next_page_id
        if page_id is None:
            break
    await store.close()
    projection = AguiProjection(root_id, subagents=tree)
    started, events, size = time.perf_counter(), 0, 0
    for wire in records:
        frames = projection.receive(wire)
        events += len(frames)
        size += len(encode_frames(frames))
    seconds = time.perf_counter() - started
    stored = sum(len(wire) for wire in records)
    return {"records": len(records), "events": events, "bytes": size, "stored_bytes": stored, "seconds": seconds}


class SSEClient(SocketClient):
    """``bench/sse_client.py`` in a subprocess (the same protocol as the socket client)."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.args = [sys.executable, str(ROOT / "bench/sse_client.py"), url]


async def measure(folder: Path, db: Path, root_id: str, count: int, rounds: int) -> dict:
    port = 18500 + os.getpid() % 1000
    env = {**os.environ, "OH_DATABASE_URL": f"sqlite:///{db}", "OH_WORKSPACE_PATH": str(folder / "ws"),
           "OH_FORWARD_SUBAGENT_EVENTS": "true", "PYTHONPATH": str(ROOT)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "taskwire.cli", "serve", "--port", str(port), env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    ws, sse = [], []
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            while True:
                try:
                    if (await client.get("/ready")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.05)
        for _ in range(rounds):  # interleaved, so both see the same machine
            async with SocketClient(f"ws://127.0.0.1:{port}/sockets/events/{root_id}?resend_mode=all", count=count) as c:
                ws.append(await c.result(timeout=900))
            async with SSEClient(f"{base}/agui/{root_id}?until=idle") as c:
                sse.append(await c.result(timeout=900))
    finally:
        proc.terminate()
        await proc.wait()
    return {"ws": ws, "sse": sse}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = folder / "agui.db"
        root_id = await load(db, args.events)
        await end_the_run(db, root_id)
        records = args.events + 1
        alone = await projection_alone(db, root_id)
        runs = await measure(folder, db, root_id, records, args.rounds)
    ws_rates = [r["frames"] / r["seconds"] for r in runs["ws"]]
    sse_rates = [records / r["seconds"] for r in runs["sse"]]
    sse = runs["sse"][0]
    assert sse["last_id"] == records and all(r["events"] == alone["events"] for r in runs["sse"]), (sse, alone)
    table = Table(title=f"replay of one tree of {records:,} records (SQLite), server in its own process, {args.rounds} rounds")
    table.add_column("measure")
    table.add_column("median", justify="right")
    table.add_column("all rounds", justify="right")
    fmt = lambda rates: " / ".join(f"{r:,.0f}" for r in rates)  # noqa: E731
    table.add_row("WebSocket, records/s", f"{statistics.median(ws_rates):,.0f}", fmt(ws_rates))
    table.add_row("AG-UI over SSE, records/s", f"{statistics.median(sse_rates):,.0f}", fmt(sse_rates))
    per = sse["events"] / records
    table.add_row(f"  AG-UI events/s ({per:.2f} per record)", f"{statistics.median(sse_rates) * per:,.0f}", "")
    table.add_row("  SSE / WebSocket", f"{statistics.median(sse_rates) / statistics.median(ws_rates):.2f}", "")
    table.add_row("projection alone (no I/O), records/s", f"{alone['records'] / alone['seconds']:,.0f}", "")
    table.add_row("bytes per record: SSE / WebSocket (the stored JSON)", f"{sse['bytes'] / records:.0f} / {alone['stored_bytes'] / records:.0f}", "")
    console.print(table)
    console.print(json.dumps({"ws": runs["ws"], "sse": runs["sse"], "alone": alone}))


if __name__ == "__main__":
    asyncio.run(main())
