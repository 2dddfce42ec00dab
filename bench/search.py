"""Body text search benchmark: the trigram indexes against the old scan of the JSON, same data.

    python bench/search.py                                  # SQLite at 1M events, PostgreSQL at 200k
    python bench/search.py --events 100000 --pg-events 20000 # quick
    python bench/search.py --backends sqlite

For each backend it loads one conversation tree (the root's stream and ten sub-agents; tool
calls, outputs of about 300 characters, messages) through the store's ``append``, with a rare
word in 0.001 % of the events and a common one in 1 %, then times the first page of 100 of
``body=`` for the rare word, a word in no event, the common word and a two-character term
(under three characters: read row by row), each beside the old way in the same process on the
same rows: ``json LIKE '%term%'`` (``ILIKE`` on PostgreSQL) in ``seq`` order, which stops
once it has a page, so a rare or absent word reads the whole tree. Then appends per second
with the text kept and indexed against without (the text derivation switched off, so nothing
is indexed), in alternating chunks into two fresh stores; and, for SQLite, how long opening a
database written before the text was kept takes to fill it in. It prints figures; it asserts
nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import taskwire.store.rows as rows
from taskwire.events import ACPToolCallEvent, ActionEvent, Event, MessageEvent, ObservationEvent
from taskwire.store import Store, open_store
from taskwire.store.base import EventQuery
from taskwire.store.filters import like_pattern
from taskwire.store.sqlite_schema import MIGRATIONS, statements

ROOT = "bench-root"
SUBAGENTS = [f"bench-sub-{n}" for n in range(10)]
CHUNK = 10_000
RARE, COMMON, ABSENT, SHORT = "zanzibar", "haystack", "quetzalcoatl", "zq"
RARE_EVERY, COMMON_EVERY = 100_000, 100  # 0.001 % and 1 %
OUTPUT = "total 48\ndrwxr-xr-x  5 user staff  160 Nov 29 10:00 src\n-rw-r--r--  1 user staff 1024 README.md\n" * 3
REPEAT = 100
POSTGRES_URL = os.environ.get("TASKWIRE_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def make_event(i: int) -> tuple[str, Event]:
    """The i-th event of the log: (conversation id, event); deterministic."""
    in_subagent = (i // 1_000) % 7 == 6
    conversation = SUBAGENTS[(i // 7_000) % len(SUBAGENTS)] if in_subagent else ROOT
    r = i % 10
    word = RARE if i % RARE_EVERY == RARE_EVERY // 2 + 7 else COMMON if i % COMMON_EVERY == 37 else "needle"
    event: Event
    if r < 3:
        event = ActionEvent(tool_name="terminal", tool_call_id=f"call-{i}", arguments={"command": f"ls -la /tmp/{i}"})
    elif r < 6:
        event = ObservationEvent(tool_name="terminal", tool_call_id=f"call-{i}", content=f"{OUTPUT}{i}")
    elif r < 9:
        event = MessageEvent(content=f"Step {i}: looking for the {word} before changing anything.")
    else:
        event = ACPToolCallEvent(tool_call_id=f"acp-{i}", title=f"Read file {i}.py", status="completed", tool_kind="read")
    if in_subagent:
        event.subagent_id = conversation
        event.parent_tool_use_id = f"task-{conversation}"
    return conversation, event


async def load(store: Store, size: int, root: str = ROOT, start: int = 0) -> float:
    """Append ``size`` events, ``CHUNK`` in flight; events/s (building events not timed)."""
    spent = 0.0
    for first in range(start, start + size, CHUNK):
        batch = [make_event(i) for i in range(first, min(start + size, first + CHUNK))]
        began = time.perf_counter()
        await asyncio.gather(*(store.append(c if root == ROOT else root, root, e) for c, e in batch))
        spent += time.perf_counter() - began
    return size / spent


async def latency(run: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """Median and p99 (ms) of up to ``REPEAT`` runs, at most about 5 s of them (at least 3)."""
    await run()
    times: list[float] = []
    began_all = time.perf_counter()
    while len(times) < REPEAT and (len(times) < 3 or time.perf_counter() - began_all < 5):
        began = time.perf_counter()
        await run()
        times.append((time.perf_counter() - began) * 1000)
    times.sort()
    return statistics.median(times), times[max(0, int(len(times) * 0.99) - 1)]


def old_scan(store: Store, backend: str, term: str) -> Callable[[], Awaitable[Any]]:
    """The search as it was: the JSON, case-insensitive LIKE, in seq order, a page of 100."""
    if backend == "sqlite":
        sql = (
            "SELECT seq, json FROM events WHERE tree = (SELECT id FROM trees WHERE root_id = ?) "
            "AND json LIKE ? ESCAPE '\\' ORDER BY seq LIMIT 101"
        )
        return lambda: store._db.fetchall(sql, (ROOT, like_pattern(term)))  # type: ignore[attr-defined]
    sql = (
        "SELECT seq, json FROM events WHERE tree = (SELECT id FROM trees WHERE root_id = $1) "
        "AND json ILIKE $2 ESCAPE '\\' ORDER BY seq LIMIT 101"
    )
    return lambda: store.pool.fetch(sql, ROOT, like_pattern(term))  # type: ignore[attr-defined]


async def searches(store: Store, backend: str, size: int, console: Console) -> dict[str, str]:
    figures: dict[str, str] = {}
    for name, term in (
        (f"rare word ({RARE}, 0.001 %)", RARE), (f"absent word ({ABSENT})", ABSENT),
        (f"common word ({COMMON}, 1 %)", COMMON), (f"two characters ({SHORT}, absent)", SHORT),
    ):  # fmt: skip
        query = EventQuery(root_id=ROOT, body=term)
        page = await store.search(query)
        old_rows = await old_scan(store, backend, term)()
        assert [r.seq for r in page.items] == [r[0] for r in old_rows][: len(page.items)], name  # same answer
        new = await latency(lambda: store.search(query))
        old = await latency(old_scan(store, backend, term))
        figures[f"first page, {name}: {len(page.items)} found (ms p50 / p99)"] = (
            f"{new[0]:.2f} / {new[1]:.2f}  (old scan {old[0]:.2f} / {old[1]:.2f})"
        )
        console.log(f"{backend} {size:,}: {name}: {new[0]:.2f} ms, old scan {old[0]:.2f} ms")
    count_query = EventQuery(root_id=ROOT, body=RARE)
    figures["count, rare word (ms p50 / p99)"] = "%.2f / %.2f" % await latency(lambda: store.count(count_query))
    return figures


async def append_rates(url: str, other_url: str, size: int) -> tuple[float, float]:
    """Appends/s with the text kept and indexed, and without: chunks alternate between two fresh
    stores, the text derivation switched off for the second (so nothing is indexed)."""
    kept_text = rows.body_text
    indexed, plain = open_store(url), open_store(other_url)
    await indexed.open()
    await plain.open()
    spent = {"indexed": 0.0, "plain": 0.0}
    try:
        for first in range(0, size, CHUNK):
            for name, store in (("indexed", indexed), ("plain", plain)):
                rows.body_text = kept_text if name == "indexed" else (lambda event: "")  # type: ignore[assignment]
                began = time.perf_counter()
                await load(store, min(CHUNK, size - first), root="bench-appends", start=first)
                spent[name] += time.perf_counter() - began
    finally:
        rows.body_text = kept_text  # type: ignore[assignment]
        await indexed.close()
        await plain.close()
    return size / spent["indexed"], size / spent["plain"]


def write_old_database(path: Path, size: int) -> None:
    """A database as a version-1 taskwire left it: the same events, no text column."""
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in statements(MIGRATIONS[0]):
        conn.execute(statement)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version VALUES (1)")
    conn.execute("BEGIN")
    conn.execute("INSERT INTO trees (root_id) VALUES (?)", (ROOT,))
    for first in range(0, size, 50_000):
        batch = []
        for i in range(first, min(size, first + 50_000)):
            conversation, event = make_event(i)
            event.seq = i + 1
            r = rows.event_record(conversation, ROOT, event)
            batch.append((1, r.seq, r.id, r.conversation_id, r.kind, r.source, r.timestamp, r.subagent_id, r.parent_tool_use_id, r.json))
        conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", batch)
    conn.execute("COMMIT")
    conn.close()


async def bench_sqlite(size: int, append_size: int, fill: bool, folder: Path, console: Console) -> dict[str, str]:
    figures: dict[str, str] = {}
    db = folder / "search.db"
    store = open_store(f"sqlite:///{db}")
    await store.open()
    try:
        console.log(f"sqlite {size:,}: loading")
        figures["load, concurrent appends (events/s)"] = f"{await load(store, size):,.0f}"
        began = time.perf_counter()
        await store.index_pending()  # type: ignore[attr-defined]
        figures["text index behind after the load: caught up in (s)"] = f"{time.perf_counter() - began:.1f}"
        figures.update(await searches(store, "sqlite", size, console))
    finally:
        await store.close()
    figures["database file (MB)"] = f"{db.stat().st_size / 1e6:,.0f}"
    db.unlink()
    console.log(f"sqlite: appends with and without the index, {append_size:,} each")
    with_index, without = await append_rates(f"sqlite:///{folder}/a.db", f"sqlite:///{folder}/b.db", append_size)
    figures[f"appends/s, {append_size:,} into fresh stores: indexed / without"] = (
        f"{with_index:,.0f} / {without:,.0f} ({with_index / without - 1:+.1%})"
    )
    if fill:
        old = folder / "old.db"
        console.log(f"sqlite {size:,}: writing a version-1 database")
        write_old_database(old, size)
        began = time.perf_counter()
        upgraded = open_store(f"sqlite:///{old}")
        await upgraded.open()
        took = time.perf_counter() - began
        found = await upgraded.count(EventQuery(root_id=ROOT, body=RARE))
        began = time.perf_counter()
        await upgraded.index_pending()  # type: ignore[attr-defined]
        caught_up = time.perf_counter() - began
        await upgraded.close()
        figures[f"open an old database: fill {size:,} events (s)"] = f"{took:.1f} ({size / took:,.0f} events/s; {found} rare found)"
        figures["  then its text index caught up in (s, while serving)"] = f"{caught_up:.1f}"
    return figures


async def bench_postgres(size: int, append_size: int, console: Console) -> dict[str, str]:
    import asyncpg

    figures: dict[str, str] = {}
    schemas = [f"bench_search_{os.getpid()}_{n}" for n in range(3)]
    admin = await asyncpg.connect(POSTGRES_URL)
    try:
        await admin.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
        for schema in schemas:
            await admin.execute(f"CREATE SCHEMA {schema}")
        urls = [f"{POSTGRES_URL}?search_path={schema}" for schema in schemas]
        store = open_store(urls[0])
        await store.open()
        try:
            console.log(f"postgres {size:,}: loading")
            figures["load, concurrent appends (events/s)"] = f"{await load(store, size):,.0f}"
            began = time.perf_counter()
            await store.index_pending()  # type: ignore[attr-defined]
            figures["text index behind after the load: caught up in (s)"] = f"{time.perf_counter() - began:.1f}"
            await store.pool.execute("ANALYZE events")  # type: ignore[attr-defined]
            await store.pool.execute("ANALYZE event_text")  # type: ignore[attr-defined]
            figures.update(await searches(store, "postgres", size, console))
        finally:
            await store.close()
        console.log(f"postgres: appends with and without the index, {append_size:,} each")
        with_index, without = await append_rates(urls[1], urls[2], append_size)
        figures[f"appends/s, {append_size:,} into fresh stores: indexed / without"] = (
            f"{with_index:,.0f} / {without:,.0f} ({with_index / without - 1:+.1%})"
        )
    finally:
        for schema in schemas:
            await admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        await admin.close()
    return figures


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the SQLite log")
    parser.add_argument("--pg-events", type=int, default=200_000, help="events in the PostgreSQL log")
    parser.add_argument("--append-events", type=int, default=200_000, help="events for the append comparison")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--no-fill", action="store_true", help="skip the upgrade of an old database")
    parser.add_argument("--dir", default=None, help="where the databases go (default: a temp folder)")
    args = parser.parse_args()
    console = Console()
    console.log(f"python {os.sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}, {os.cpu_count()} CPUs")
    results: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        if "sqlite" in args.backends:
            results[f"SQLite, {args.events:,} events"] = await bench_sqlite(
                args.events, args.append_events, not args.no_fill, Path(folder), console
            )
    if "postgres" in args.backends:
        results[f"PostgreSQL, {args.pg_events:,} events"] = await bench_postgres(
            args.pg_events, min(args.append_events, args.pg_events), console
        )
    for title, figures in results.items():
        table = Table(title=f"body= search, {title} (ms: median / p99; old scan beside)")
        table.add_column("measure")
        table.add_column("figure", justify="right")
        for name, value in figures.items():
            table.add_row(name, value)
        console.print(table)


if __name__ == "__main__":
    asyncio.run(main())
