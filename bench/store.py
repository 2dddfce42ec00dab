"""Store benchmark: append rate, page and count latency, memory, at several log sizes.

    python bench/store.py                      # 10k, 100k and 1M events
    python bench/store.py --sizes 10000,100000

For each size it loads one conversation tree (the root's stream plus ten sub-agents) through
``SQLiteStore.append`` in big concurrent batches (group commit), then times a single
sequential appender, a single sequential conversation update, pages of 100 from several
starting points, filtered counts, and, as the ceiling, bare ``sqlite3`` inserts of the same
rows (``executemany``, one transaction, same schema). It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sqlite3
import statistics
import tempfile
import time
from datetime import datetime
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from taskwire.events import (
    ACPToolCallEvent,
    ActionEvent,
    ConversationStateUpdateEvent,
    Event,
    MessageEvent,
    ObservationEvent,
)
from taskwire.store.base import ConversationRecord, EventQuery
from taskwire.store.rows import event_record
from taskwire.store.sqlite import SQLiteStore
from taskwire.store.sqlite_schema import MIGRATIONS

ROOT = "bench-root"
SUBAGENTS = [f"bench-sub-{n}" for n in range(10)]
CHUNK = 10_000  # appends in flight at once during the load
SEQUENTIAL = 2_000  # events for the one-at-a-time appender
REPEAT = 200  # timed runs of each search
OUTPUT = "x" * 40 + " lines of terminal output that a tool produced, long enough to be typical " * 3


def make_event(i: int) -> tuple[str, Event]:
    """The i-th event of the bench log: (conversation id, event); deterministic mix."""
    in_subagent = (i // 1_000) % 7 == 6  # blocks of 1,000 events, about 14% of the log
    conversation = SUBAGENTS[(i // 7_000) % len(SUBAGENTS)] if in_subagent else ROOT
    call = f"call-{i // 20}"
    r = i % 20
    event: Event
    if r < 6:
        event = ActionEvent(tool_name="terminal", tool_call_id=f"{call}-{r}", arguments={"command": f"ls -la /tmp/{i}"})
    elif r < 12:
        event = ObservationEvent(tool_name="terminal", tool_call_id=f"{call}-{r - 6}", content=OUTPUT)
    elif r < 16:
        event = MessageEvent(content=f"Step {i}: looking at the files before changing anything.")
    elif r == 16:
        event = MessageEvent(role="user", source="user", content=f"Please continue with item {i}")
    elif r == 17:
        event = ConversationStateUpdateEvent(key="status", value="running")
    else:
        event = ACPToolCallEvent(tool_call_id=f"{call}-acp", title="Read file", status="completed", tool_kind="read")
    if in_subagent:
        event.subagent_id = conversation
        event.parent_tool_use_id = f"task-{conversation}"
    return conversation, event


def rss_mb() -> tuple[float, float]:
    """(current, peak since the last reset) resident memory of this process, MB."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def reset_peak_rss() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass  # peak then counts from the process start


@dataclass
class Result:
    size: int
    figures: dict[str, str] = field(default_factory=dict)


async def load(store: SQLiteStore, size: int) -> float:
    """Append ``size`` events with ``CHUNK`` appends in flight; events/s (building the event
    objects is not timed)."""
    spent = 0.0
    for start in range(0, size, CHUNK):
        batch = [make_event(i) for i in range(start, min(size, start + CHUNK))]
        began = time.perf_counter()
        await asyncio.gather(*(store.append(conversation, ROOT, event) for conversation, event in batch))
        spent += time.perf_counter() - began
    return size / spent


async def append_sequentially(store: SQLiteStore) -> float:
    events = [make_event(i)[1] for i in range(SEQUENTIAL)]
    began = time.perf_counter()
    for event in events:
        await store.append("bench-sequential", "bench-sequential", event)
    return SEQUENTIAL / (time.perf_counter() - began)


async def update_sequentially(store: SQLiteStore) -> float:
    """A conversation's row written ``SEQUENTIAL`` times, one write at a time (what a status or
    usage change costs: a read and an update in one transaction, in a task the store owns)."""
    await store.create_conversation(ConversationRecord(id="bench-updated", root_id="bench-updated"))
    began = time.perf_counter()
    for n in range(SEQUENTIAL):
        await store.update_conversation("bench-updated", title=f"update {n}")
    return SEQUENTIAL / (time.perf_counter() - began)


async def latency(run: Callable[[], Awaitable[Any]]) -> str:
    """Median and 99th percentile of ``REPEAT`` runs (fewer for a slow one), ms."""
    await run()  # warm the cache
    times: list[float] = []
    began_all = time.perf_counter()
    while len(times) < REPEAT and (len(times) < 20 or time.perf_counter() - began_all < 5):
        began = time.perf_counter()
        await run()
        times.append((time.perf_counter() - began) * 1000)
    times.sort()
    return f"{statistics.median(times):.2f} / {times[max(0, int(len(times) * 0.99) - 1)]:.2f}"


def bare_sqlite_rate(path: Path, size: int) -> float:
    """The ceiling: the same rows into the same schema with ``executemany``, one transaction."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    for statement in MIGRATIONS[0].split(";"):
        conn.execute(statement)
    conn.execute("INSERT INTO trees (root_id) VALUES (?)", (ROOT,))
    spent = 0.0
    conn.execute("BEGIN")
    for start in range(0, size, 50_000):
        rows = list(_rows(start, min(size, start + 50_000)))
        began = time.perf_counter()
        conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        spent += time.perf_counter() - began
    began = time.perf_counter()
    conn.execute("COMMIT")
    spent += time.perf_counter() - began
    conn.close()
    return size / spent


def _rows(start: int, stop: int) -> Iterator[tuple[Any, ...]]:
    for i in range(start, stop):
        conversation, event = make_event(i)
        event.seq = i + 1
        r = event_record(conversation, ROOT, event)
        yield (1, r.seq, r.id, r.conversation_id, r.kind, r.source, r.timestamp, r.subagent_id, r.parent_tool_use_id, r.json)


async def bench_size(size: int, folder: Path, console: Console) -> Result:
    result = Result(size)
    db = folder / f"bench-{size}.db"
    store = SQLiteStore(f"sqlite:///{db}")
    await store.open()
    try:
        reset_peak_rss()
        console.log(f"{size:,} events: loading")
        rate = await load(store, size)
        gc.collect()
        rss, peak = rss_mb()
        result.figures["append, concurrent (events/s)"] = f"{rate:,.0f}"
        result.figures["append, one at a time (events/s)"] = f"{await append_sequentially(store):,.0f}"
        result.figures["conversation update, one at a time (writes/s)"] = f"{await update_sequentially(store):,.0f}"
        console.log(f"{size:,} events: searching")
        deep = int(size * 0.9)
        deep_event = (await store.search(EventQuery(root_id=ROOT, after_seq=deep - 1), limit=1)).items[0]
        late = datetime.fromisoformat(deep_event.timestamp.replace("Z", "+00:00"))
        searches: dict[str, Callable[[], Awaitable[Any]]] = {
            "page: first": lambda: store.search(EventQuery(root_id=ROOT)),
            "page: deep (after_seq)": lambda: store.search(EventQuery(root_id=ROOT, after_seq=deep)),
            "page: last (newest first)": lambda: store.search(EventQuery(root_id=ROOT), order="TIMESTAMP_DESC"),
            "page: kind, deep": lambda: store.search(EventQuery(root_id=ROOT, kinds=["ObservationEvent"], after_seq=deep)),
            "page: root stream + kind": lambda: store.search(
                EventQuery(root_id=ROOT, conversation_ids=[ROOT], kinds=["MessageEvent"], after_seq=size // 2)
            ),
            "page: user messages (rare)": lambda: store.search(EventQuery(root_id=ROOT, source="user", after_seq=deep)),
            "page: sub-agent (parent_tool_use_id)": lambda: store.search(
                EventQuery(root_id=ROOT, parent_tool_use_id=f"task-{SUBAGENTS[0]}", after_seq=size // 2)
            ),
            "page: time range, late start (timestamp_gte)": lambda: store.search(
                EventQuery(root_id=ROOT, timestamp_gte=late)
            ),
            "count: kind": lambda: store.count(EventQuery(root_id=ROOT, kinds=["ActionEvent"])),
            "count: root stream + kind": lambda: store.count(
                EventQuery(root_id=ROOT, conversation_ids=[ROOT], kinds=["ActionEvent"])
            ),
            "count: whole tree": lambda: store.count(EventQuery(root_id=ROOT)),
        }
        for name, run in searches.items():
            result.figures[f"{name} (ms p50 / p99)"] = await latency(run)
        _, search_peak = rss_mb()
        result.figures["RSS after load / peak (MB)"] = f"{rss:.0f} / {max(peak, search_peak):.0f}"
    finally:
        await store.close()
    result.figures["database file (MB)"] = f"{db.stat().st_size / 1e6:,.0f}"
    db.unlink()
    console.log(f"{size:,} events: bare sqlite3 ceiling")
    ceiling = folder / f"ceiling-{size}.db"
    result.figures["bare sqlite3 executemany (rows/s)"] = f"{bare_sqlite_rate(ceiling, size):,.0f}"
    ceiling.unlink()
    return result


def show(results: list[Result], console: Console) -> None:
    table = Table(title="SQLiteStore: one tree, pages of 100 (ms: median / p99 of %d runs)" % REPEAT)
    table.add_column("measure")
    for result in results:
        table.add_column(f"{result.size:,} events", justify="right")
    order = list(results[0].figures)
    order.insert(2, order.pop(order.index("bare sqlite3 executemany (rows/s)")))
    for name in order:
        table.add_row(name, *(result.figures.get(name, "") for result in results))
    console.print(table)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated event counts")
    parser.add_argument("--dir", default=None, help="where the databases go (default: a temp folder)")
    args = parser.parse_args()
    sizes = [int(part) for part in args.sizes.split(",") if part.strip()]
    console = Console()
    console.log(f"python {os.sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        results = [await bench_size(size, Path(folder), console) for size in sizes]
    show(results, console)


if __name__ == "__main__":
    asyncio.run(main())
