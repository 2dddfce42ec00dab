"""How long a running conversation takes to notice PostgreSQL is back, say so and carry on.

A private PostgreSQL cluster (``tests/private_postgres.py``: initdb on a free port; the shared
server is never touched), one server on it in this process, one conversation whose agent makes
a tool call every 150 ms. Each round stops the database for ``--down`` seconds while the run
writes, then starts it (``pg_ctl start -w``: it returns once the database answers). Measured
from that moment: the store's health back (its probe), ``/ready`` 200, the ``paused`` status
with its reason in the stream, the run's ``running`` again, and its first tool output after
that (the events are read over REST every 10 ms or so). The ceiling: a bare asyncpg client's first write after the same start.

    .venv/bin/python bench/database_restart.py [--rounds 3] [--down 1.0]
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
from typing import Any, Awaitable, Callable

import asyncpg
from common import ROOT, RunningServer, isolated_settings, taskwire_server
from rich.console import Console
from rich.table import Table

from tests.private_postgres import PrivatePostgres  # noqa: E402

POLL = 0.01


def ticking(turns: int) -> str:
    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "terminal", "arguments": {"command": f"sleep 0.15; echo tick {n}"}}]} for n in range(turns)
    ]
    steps.append({"tool_calls": [{"name": "finish", "arguments": {"message": "ticked"}}]})
    return json.dumps({"lanes": [{"name": "main", "turns": steps}]})


async def until(check: Callable[[], Awaitable[bool] | bool], started: float) -> float:
    """Seconds from ``started`` until ``check`` holds."""
    while True:
        result = check()
        if result if isinstance(result, bool) else await result:
            return time.monotonic() - started
        await asyncio.sleep(POLL)


async def bare_write(url: str, started: float) -> float:
    """The ceiling: a client of its own connecting and writing, from ``started``."""
    while True:
        try:
            conn = await asyncpg.connect(url, timeout=2)
            try:
                await conn.execute("CREATE TABLE IF NOT EXISTS bench_probe (x int); INSERT INTO bench_probe VALUES (1)")
            finally:
                await conn.close()
            return time.monotonic() - started
        except (OSError, asyncpg.PostgresError, asyncio.TimeoutError):
            await asyncio.sleep(POLL)


async def kinds(server: RunningServer, cid: str, kind: str) -> list[dict[str, Any]]:
    """Every event of ``kind`` in the conversation, oldest first."""
    items: list[dict[str, Any]] = []
    page = None
    while True:
        params: dict[str, Any] = {"kind": kind, "limit": 100, **({"page_id": page} if page else {})}
        found = (await server.client.get(f"/api/conversations/{cid}/events/search", params=params)).json()
        items += found["items"]
        page = found.get("next_page_id")
        if not page:
            return items


async def statuses(server: RunningServer, cid: str) -> list[dict[str, Any]]:
    return [e for e in await kinds(server, cid, "ConversationStateUpdateEvent") if e["key"] == "status"]


async def one_round(server: RunningServer, pg: PrivatePostgres, cid: str, down: float) -> dict[str, float]:
    store = server.app.state.store
    paused_before = sum(e["value"] == "paused" for e in await statuses(server, cid))
    await asyncio.to_thread(pg.stop)
    await asyncio.sleep(down)
    await asyncio.to_thread(pg.start)
    answered = time.monotonic()
    health, ceiling = await asyncio.gather(until(lambda: store.health.reason is None, answered), bare_write(pg.url, answered))

    async def ready() -> bool:
        return (await server.client.get("/ready")).status_code == 200

    marks: dict[str, float] = {}

    async def carried_on() -> bool:
        now = time.monotonic() - answered
        found = await statuses(server, cid)
        paused = [n for n, e in enumerate(found) if e["value"] == "paused"]
        if len(paused) <= paused_before:
            return False
        marks.setdefault("paused, saying why", now)
        resumed = [e for e in found[paused[-1]:] if e["value"] == "running"]
        if not resumed:
            return False
        marks.setdefault("running again", now)
        outputs = await kinds(server, cid, "ObservationEvent")
        if any(e["seq"] > resumed[0]["seq"] for e in outputs):
            marks.setdefault("first tool output", now)
            return True
        return False

    ready_s = await until(ready, answered)
    await until(carried_on, answered)
    return {"store healthy": health, "/ready 200": ready_s, **marks, "ceiling: bare write": ceiling}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--down", type=float, default=1.0)
    args = parser.parse_args()
    pg = PrivatePostgres()
    await asyncio.to_thread(pg.init)
    await asyncio.to_thread(pg.start)
    rows: list[dict[str, float]] = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            settings = isolated_settings(Path(folder), database_url=pg.url, store_timeout=1)
            async with taskwire_server(settings) as server:
                body = {"agent": {"kind": "native", "llm": {"api": "scripted", "script": ticking(40 * args.rounds)}},
                        "initial_message": "go"}
                cid = (await server.client.post("/api/conversations", json=body)).json()["id"]
                for _ in range(args.rounds):
                    await asyncio.sleep(1.5)  # well under way again
                    rows.append(await one_round(server, pg, cid, args.down))
    finally:
        await asyncio.to_thread(pg.close)
    table = Table(title=f"database restart, {args.rounds} round(s), down {args.down} s, load {os.getloadavg()[0]:.1f}")
    table.add_column("seconds from the database answering to")
    for n in range(len(rows)):
        table.add_column(f"round {n + 1}", justify="right")
    table.add_column("median", justify="right")
    for key in rows[0]:
        values = [row.get(key, float("nan")) for row in rows]
        table.add_row(key, *(f"{v:.2f}" for v in values), f"{statistics.median(values):.2f}")
    Console().print(table)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    asyncio.run(main())
