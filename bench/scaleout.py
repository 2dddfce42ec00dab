"""Scale-out benchmark: PostgreSQL + Redis next to SQLite + the in-process bus.

    .venv/bin/python bench/scaleout.py                    # 1M-event store, 20k live events
    .venv/bin/python bench/scaleout.py --events 100000 --live-events 5000

1. The store: one tree of ``--events`` events (the log of ``bench/store.py``) loaded through
   ``append`` with 10,000 appends in flight (group commit), then pages of 100 and counts from
   several starting points, on ``SQLiteStore`` and on ``PostgresStore``.
2. Live delivery to a WebSocket client in its own process: a server with SQLite and the
   in-process bus; then replica A (this process) and replica B (a ``taskwire serve`` process)
   on PostgreSQL and Redis, the client on A, then on B, while A emits. Events/s with 32 tasks
   emitting at once (appends committed in groups), then the emit-to-client latency at 1,000
   events/s from one emitter.

Needs PostgreSQL and Redis (``make services``); works in a schema of its own, dropped after.
It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable

import asyncpg
import httpx
from common import ROOT as REPO
from common import SocketClient, isolated_settings, paced_emit, taskwire_server
from rich.console import Console
from rich.table import Table
from store import ROOT, SUBAGENTS, latency, load

from taskwire.store import Store, open_store
from taskwire.store.base import EventQuery

POSTGRES = os.environ.get("TASKWIRE_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
REDIS = os.environ.get("TASKWIRE_BENCH_REDIS", "redis://127.0.0.1:6379/0")
EMITTERS = 32


@asynccontextmanager
async def postgres_schema() -> AsyncIterator[str]:
    """A URL to a schema of this run's own, dropped afterwards."""
    schema = f"taskwire_bench_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(POSTGRES)
    await admin.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{POSTGRES}?search_path={schema}"
    finally:
        await admin.execute(f"DROP SCHEMA {schema} CASCADE")
        await admin.close()


# -- 1. the store ---------------------------------------------------------------------------


def searches(store: Store, size: int) -> dict[str, Callable[[], Awaitable[Any]]]:
    deep = int(size * 0.9)
    return {
        "page: first": lambda: store.search(EventQuery(root_id=ROOT)),
        "page: deep (after_seq at 90%)": lambda: store.search(EventQuery(root_id=ROOT, after_seq=deep)),
        "page: newest first": lambda: store.search(EventQuery(root_id=ROOT), order="TIMESTAMP_DESC"),
        "page: kind, deep": lambda: store.search(EventQuery(root_id=ROOT, kinds=["ObservationEvent"], after_seq=deep)),
        "page: root stream + kind": lambda: store.search(
            EventQuery(root_id=ROOT, conversation_ids=[ROOT], kinds=["MessageEvent"], after_seq=size // 2)
        ),
        "page: sub-agent (parent_tool_use_id)": lambda: store.search(
            EventQuery(root_id=ROOT, parent_tool_use_id=f"task-{SUBAGENTS[0]}", after_seq=size // 2)
        ),
        "page: body text, deep": lambda: store.search(EventQuery(root_id=ROOT, body="item", after_seq=deep)),
        "count: kind": lambda: store.count(EventQuery(root_id=ROOT, kinds=["ActionEvent"])),
        "count: whole tree": lambda: store.count(EventQuery(root_id=ROOT)),
    }


async def bench_store(url: str, size: int, console: Console, label: str) -> dict[str, str]:
    store = open_store(url)
    await store.open()
    figures: dict[str, str] = {}
    try:
        console.log(f"{label}: loading {size:,} events")
        figures["append, 10k in flight (events/s)"] = f"{await load(store, size):,.0f}"  # type: ignore[arg-type]
        if hasattr(store, "pool"):
            await store.pool.execute("ANALYZE events")  # what autovacuum does soon after a load
        console.log(f"{label}: searching")
        for name, run in searches(store, size).items():
            figures[f"{name} (ms p50 / p99)"] = await latency(run)
    finally:
        await store.close()
    return figures


# -- 2. live delivery -----------------------------------------------------------------------


class ReplicaProcess:
    """``taskwire serve`` in its own process, on the same database and Redis."""

    def __init__(self, folder: Path, database_url: str, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
        env.update(OH_DATABASE_URL=database_url, OH_REDIS_URL=REDIS, OH_REPLICA_ID="bench-b",
                   OH_WORKSPACE_PATH=str(folder / "b"), OH_WS_QUEUE_SIZE="1000000",
                   OH_CONFIG_FILE=str(folder / "none.toml"))
        self.log = (folder / "replica-b.log").open("wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "taskwire.cli", "serve", "--port", str(port)],
                                     cwd=REPO, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    async def wait_ready(self) -> None:
        async with httpx.AsyncClient() as client:
            for _ in range(600):
                try:
                    if (await client.get(f"{self.url}/ready")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
        raise RuntimeError(f"replica B did not start; see {self.log.name}")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        self.log.close()


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def deliver(server: Any, socket_base: str, count: int, *, rate: float = 0) -> dict[str, Any]:
    """Emit ``count`` events on ``server``'s runtime; a client on ``socket_base`` counts them.

    At full speed, ``EMITTERS`` tasks emit at once (as parallel sub-agents do), so appends are
    committed in groups; at a ``rate``, one task emits them one by one."""
    record = await server.runtime.create({"kind": "native"}, run=False)
    host = await server.runtime.host(record.id)
    # From the log's current end: what is emitted before the socket has subscribed is replayed.
    after = await server.runtime.store.last_seq(record.id)
    url = f"{socket_base}/sockets/events/{record.id}?after_seq={after}"
    async with SocketClient(url, count=count, latency=bool(rate)) as client:
        began = time.perf_counter()
        if rate:
            await paced_emit(host.emit, count, rate=rate)
        else:
            share = count // EMITTERS
            await asyncio.gather(*(paced_emit(host.emit, share + (n < count % EMITTERS), rate=0) for n in range(EMITTERS)))
        emitted = time.perf_counter() - began
        result = await client.result()
    result["emit_rate"] = count / emitted
    return result


async def bench_live(folder: Path, database_url: str, count: int, latency_count: int, console: Console) -> list[tuple[str, dict, dict]]:
    rows = []
    console.log("live: SQLite + in-process bus")
    settings = isolated_settings(folder / "local", ws_queue_size=count * 2)
    async with taskwire_server(settings) as server:
        burst = await deliver(server, server.ws_url, count)
        paced = await deliver(server, server.ws_url, latency_count, rate=1000)
    rows.append(("SQLite + in-process bus, socket on the same server", burst, paced))

    replica_b = ReplicaProcess(folder, database_url, free_port())
    try:
        settings = isolated_settings(folder / "a", database_url=database_url, redis_url=REDIS,
                                     replica_id="bench-a", ws_queue_size=count * 2)
        async with taskwire_server(settings) as replica_a:
            await replica_b.wait_ready()
            b_socket = replica_b.url.replace("http://", "ws://")
            console.log("live: PostgreSQL + Redis, socket on the same replica")
            burst = await deliver(replica_a, replica_a.ws_url, count)
            paced = await deliver(replica_a, replica_a.ws_url, latency_count, rate=1000)
            rows.append(("PostgreSQL + Redis, socket on the same replica", burst, paced))
            console.log("live: PostgreSQL + Redis, socket on another replica")
            burst = await deliver(replica_a, b_socket, count)
            paced = await deliver(replica_a, b_socket, latency_count, rate=1000)
            rows.append(("PostgreSQL + Redis, socket on another replica", burst, paced))
    finally:
        replica_b.stop()
    return rows


# -- report ---------------------------------------------------------------------------------


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the store's log")
    parser.add_argument("--live-events", type=int, default=20_000, help="events in the delivery burst")
    parser.add_argument("--latency-events", type=int, default=5_000, help="events sent at 1,000/s")
    parser.add_argument("--skip-store", action="store_true")
    parser.add_argument("--skip-live", action="store_true")
    args = parser.parse_args()
    console = Console(width=max(120, Console().width))
    console.log(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        async with postgres_schema() as database_url:
            if not args.skip_store:
                sqlite = await bench_store(f"sqlite:///{folder}/bench.db", args.events, console, "SQLite")
                (folder / "bench.db").unlink()
                async with postgres_schema() as store_url:
                    postgres = await bench_store(store_url, args.events, console, "PostgreSQL")
                table = Table(title=f"store: one tree of {args.events:,} events, pages of 100")
                table.add_column("measure")
                table.add_column("SQLite", justify="right")
                table.add_column("PostgreSQL", justify="right")
                for name in sqlite:
                    table.add_row(name, sqlite[name], postgres.get(name, ""))
                console.print(table)
            if not args.skip_live:
                rows = await bench_live(folder, database_url, args.live_events, args.latency_events, console)
                table = Table(title=f"live delivery to one WebSocket client ({args.live_events:,} events burst; "
                                    f"latency at 1,000 events/s over {args.latency_events:,})")
                table.add_column("path")
                table.add_column("events/s to the client", justify="right")
                table.add_column("emit rate (durable appends/s)", justify="right")
                table.add_column("latency p50 / p99 (ms)", justify="right")
                for name, burst, paced in rows:
                    table.add_row(name, f"{burst['frames'] / burst['seconds']:,.0f}", f"{burst['emit_rate']:,.0f}",
                                  f"{paced['p50_ms']:.2f} / {paced['p99_ms']:.2f}")
                console.print(table)


if __name__ == "__main__":
    asyncio.run(main())
