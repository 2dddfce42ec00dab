"""One conversation with a big log: start-up, first page, replay rate, memory.

Loads N events (default 1,000,000: the root's stream plus sub-agents) into a SQLite store,
then starts ``taskwire serve`` on it as a new process and measures: seconds from process
start to the first events response, a page of 100 and a filtered count over HTTP, the replay
of the whole log over one WebSocket (client in its own process), and the server's resident
memory after the replay. Next to it, the ceiling measured in the same run: a bare
``websockets`` server pushing the same stored JSON from a list in memory.

    .venv/bin/python bench/replay.py [--events 1000000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import httpx
import websockets
from common import ROOT, SocketClient
from rich.console import Console
from rich.table import Table

from taskwire.events import ActionEvent, ObservationEvent, SubagentFinishedEvent, SubagentStartedEvent
from taskwire.store import ConversationRecord
from taskwire.store.sqlite import SQLiteStore

SUBAGENTS = 8


async def load(db: Path, count: int, *, lifecycle: bool = False) -> str:
    """A root with ``SUBAGENTS`` sub-agents and ``count`` tool events spread over their streams.
    ``lifecycle``: also each sub-agent's ``task`` call on the root, ``SubagentStartedEvent``
    first in its stream and ``SubagentFinishedEvent`` last (what ACP child sessions announce)."""
    store = SQLiteStore(f"sqlite:///{db}")
    await store.open()
    root = ConversationRecord(id="bench-root", root_id="bench-root", status="finished", agent={"kind": "native"})
    await store.create_conversation(root)
    streams = [root.id]
    for n in range(SUBAGENTS):
        child = ConversationRecord(
            id=f"bench-sub-{n}", root_id=root.id, parent_id=root.id, parent_tool_use_id=f"call_task_{n}",
            subagent_type="general-purpose", description=f"part {n}", subagent_status="completed", label=f"task-{n + 1}",
        )
        await store.create_conversation(child)
        streams.append(child.id)
        if lifecycle:
            await store.append(root.id, root.id, ActionEvent(tool_name="task", tool_call_id=f"call_task_{n}", arguments={
                "description": f"part {n}", "prompt": f"Do part {n}.", "subagent_type": "general-purpose"}))
            await store.append(child.id, root.id, SubagentStartedEvent(
                parent_tool_use_id=f"call_task_{n}", subagent_id=child.id, description=f"part {n}", label=f"task-{n + 1}"))
    batch = 2000
    for start in range(0, count, batch):
        appends = []
        for i in range(start, min(count, start + batch)):
            stream = streams[i % len(streams)]
            stamp = {} if stream == root.id else {"parent_tool_use_id": f"call_task_{streams.index(stream) - 1}", "subagent_id": stream}
            event = (
                ActionEvent(tool_name="terminal", tool_call_id=f"c{i}", arguments={"command": f"echo {i}"}, **stamp)
                if i % 2 == 0
                else ObservationEvent(tool_name="terminal", tool_call_id=f"c{i - 1}", content=f"exit code: 0\n{i}", **stamp)
            )
            appends.append(store.append(stream, root.id, event))
        await asyncio.gather(*appends)
    for n, stream in enumerate(streams[1:] if lifecycle else []):
        stamp = {"parent_tool_use_id": f"call_task_{n}", "subagent_id": stream}
        await store.append(stream, root.id, SubagentFinishedEvent(status="completed", result=f"part {n} done", **stamp))
        await store.append(root.id, root.id, ObservationEvent(tool_name="task", tool_call_id=f"call_task_{n}", content=f"part {n} done"))
    await store.close()
    return root.id


async def bare_replay(db: Path, count: int) -> dict:
    """The ceiling: a bare websockets server sending the stored JSON from memory."""
    rows = [r[0] for r in sqlite3.connect(db).execute("SELECT json FROM events ORDER BY seq")]

    async def handler(socket) -> None:  # type: ignore[no-untyped-def]
        for row in rows:
            await socket.send(row)

    async with websockets.serve(handler, "127.0.0.1", 0, compression=None) as server:
        port = server.sockets[0].getsockname()[1]
        async with SocketClient(f"ws://127.0.0.1:{port}/", count=count) as client:
            return await client.result(timeout=900)


def rss_of(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def measure_server(folder: Path, db: Path, root_id: str, count: int) -> dict:
    port = 18000 + os.getpid() % 1000
    env = {**os.environ, "OH_DATABASE_URL": f"sqlite:///{db}", "OH_WORKSPACE_PATH": str(folder / "ws"),
           "OH_FORWARD_SUBAGENT_EVENTS": "true", "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "taskwire.cli", "serve", "--port", str(port), env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            while True:
                try:
                    response = await client.get(f"/api/conversations/{root_id}/events/search", params={"include_subagents": "true"})
                    if response.status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.01)
            first_response = time.perf_counter() - started
            page, counted = [], []
            for _ in range(50):
                t = time.perf_counter()
                await client.get(f"/api/conversations/{root_id}/events/search",
                                 params={"include_subagents": "true", "after_seq": count // 2, "limit": 100})
                page.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                await client.get(f"/api/conversations/{root_id}/events/count",
                                 params={"include_subagents": "true", "kind": "ObservationEvent"})
                counted.append((time.perf_counter() - t) * 1000)
        rss_before = rss_of(proc.pid)
        url = f"ws://127.0.0.1:{port}/sockets/events/{root_id}?resend_mode=all"
        async with SocketClient(url, count=count) as client:
            replay = await client.result(timeout=900)
        rss_after = rss_of(proc.pid)
    finally:
        proc.terminate()
        await proc.wait()
    page.sort()
    counted.sort()
    return {"first_response": first_response, "page_ms": page[len(page) // 2], "count_ms": counted[len(counted) // 2],
            "replay": replay, "rss_before": rss_before, "rss_after": rss_after}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = folder / "replay.db"
        t = time.perf_counter()
        root_id = await load(db, args.events)
        console.print(f"loaded {args.events:,} events in {time.perf_counter() - t:.0f} s ({db.stat().st_size / 1e6:.0f} MB)")
        ceiling = await bare_replay(db, args.events)
        ours = await measure_server(folder, db, root_id, args.events)
    table = Table(title=f"one conversation tree of {args.events:,} events (SQLite), server in its own process")
    table.add_column("measure")
    table.add_column("taskwire", justify="right")
    table.add_column("target", justify="right")
    table.add_row("process start -> first events response", f"{ours['first_response']:.2f} s", "< 1 s")
    table.add_row("page of 100 from the middle (HTTP, median)", f"{ours['page_ms']:.1f} ms", "< 5 ms")
    table.add_row("count by kind over the tree (HTTP, median)", f"{ours['count_ms']:.1f} ms", "< 20 ms")
    rate = ours["replay"]["frames"] / ours["replay"]["seconds"]
    bare = ceiling["frames"] / ceiling["seconds"]
    table.add_row("replay over one WebSocket", f"{rate:,.0f} events/s", ">= 60,000/s")
    table.add_row("  bare websockets server, same JSON from memory (ceiling)", f"{bare:,.0f} events/s", "")
    table.add_row("server RSS before / after the replay", f"{ours['rss_before']:.0f} / {ours['rss_after']:.0f} MB", "< 150 MB")
    console.print(table)


if __name__ == "__main__":
    asyncio.run(main())
