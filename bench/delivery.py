"""Live delivery: events per second from the runtime to one WebSocket client, next to the
ceiling measured in the same run: a bare ``websockets`` server pushing pre-serialized frames of
the same size on loopback. Then emit-to-client latency at 1,000 events/s.

Two ways to emit (``ConversationHost.emit``): waiting for each event to be durable (the
native agent before a tool runs; concurrent emitters share commits), and not waiting (a
peer agent's stream of updates through ACP or the Claude SDK; published once durable all the
same). Each measure is the median of ``--rounds`` rounds, the ceiling's too, taken in turn so
that a slow spell of this shared machine hits them alike.

    .venv/bin/python bench/delivery.py [--events 20000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import tempfile
import time
from pathlib import Path

import websockets
from common import SocketClient, isolated_settings, paced_emit, taskwire_server
from rich.console import Console
from rich.table import Table

from taskwire.events import ActionEvent


async def bare_ceiling(count: int, frame: str) -> dict:
    """A bare websockets server sending ``count`` copies of ``frame`` as fast as it can."""
    done = asyncio.Event()

    async def handler(socket) -> None:  # type: ignore[no-untyped-def]
        for _ in range(count):
            await socket.send(frame)
        await done.wait()

    async with websockets.serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        async with SocketClient(f"ws://127.0.0.1:{port}/", count=count) as client:
            result = await client.result()
        done.set()
    return result


async def taskwire_burst(folder: Path, count: int, emitters: int, wait: bool = True) -> tuple[dict, float]:
    """``emitters`` tasks emit ``count`` events between them as fast as they can: each emit
    returns once its event is durable (``wait``; concurrent emits share a commit), or once it
    is queued."""
    async with taskwire_server(isolated_settings(folder, ws_queue_size=count * 2)) as server:
        record = await server.runtime.create({"kind": "native"}, run=False)
        host = await server.runtime.host(record.id)
        url = f"{server.ws_url}/sockets/events/{record.id}?resend_mode=since&after_seq=1000000000"
        each = count // emitters
        async with SocketClient(url, count=each * emitters) as client:
            started = time.perf_counter()
            emit = functools.partial(host.emit, wait=wait)
            await asyncio.gather(*(paced_emit(emit, each, rate=0) for _ in range(emitters)))
            emit_seconds = time.perf_counter() - started
            return await client.result(), each * emitters / emit_seconds


async def taskwire_latency(folder: Path, count: int) -> dict:
    async with taskwire_server(isolated_settings(folder)) as server:
        record = await server.runtime.create({"kind": "native"}, run=False)
        host = await server.runtime.host(record.id)
        url = f"{server.ws_url}/sockets/events/{record.id}?resend_mode=since&after_seq=1000000000"
        async with SocketClient(url, count=count, latency=True) as client:
            await paced_emit(host.emit, count, rate=1000.0)
            return await client.result()


WAYS = [(n, True) for n in (1, 8, 32, 128)] + [(n, False) for n in (1, 8)]
"""(emitters, wait for each commit)"""


def _label(emitters: int, wait: bool) -> str:
    how = "awaiting each durable append" if wait else "not waiting (published once durable)"
    return f"taskwire, {emitters} emitter(s) {how}"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--latency-events", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sample = ActionEvent(tool_name="think", tool_call_id="bench-0", arguments={"thought": "step 0"}, seq=1).to_json()
    ceilings: list[float] = []
    rates: dict[tuple[int, bool], list[float]] = {way: [] for way in WAYS}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            ceiling = await bare_ceiling(args.events, sample)
            ceilings.append(ceiling["frames"] / ceiling["seconds"])
            for emitters, wait in WAYS:
                folder = Path(tmp) / f"burst-{round_}-{emitters}-{wait}"
                burst, _ = await taskwire_burst(folder, args.events, emitters, wait)
                rates[(emitters, wait)].append(burst["frames"] / burst["seconds"])
        latency = await taskwire_latency(Path(tmp) / "latency", args.latency_events)
    table = Table(title=f"live delivery to one WebSocket client ({args.events:,} events of {len(sample)} bytes), median of {args.rounds}")
    table.add_column("path")
    table.add_column("events/s", justify="right")
    table.add_column("of ceiling", justify="right")
    bare_rate = statistics.median(ceilings)
    table.add_row("bare websockets server, pre-serialized frames (ceiling)", f"{bare_rate:,.0f}", "1.00")
    for way in WAYS:
        rate = statistics.median(rates[way])
        table.add_row(_label(*way), f"{rate:,.0f}", f"{rate / bare_rate:.2f}")
    console = Console(width=120)
    console.print(table)
    best = max(statistics.median(r) for r in rates.values())
    waited = max(statistics.median(r) for (_, wait), r in rates.items() if wait)
    console.print(f"best taskwire / ceiling: [bold]{best / bare_rate:.2f}[/bold] (target >= 0.25); emitters that wait: {waited / bare_rate:.2f}")
    console.print(f"ceiling per round: {', '.join(f'{c:,.0f}' for c in ceilings)}")
    console.print(
        f"at 1,000 events/s: emit-to-client p50 {latency['p50_ms']:.2f} ms, p99 [bold]{latency['p99_ms']:.2f} ms[/bold]"
        f" over {latency['frames']} events (target p99 <= 5 ms)"
    )


if __name__ == "__main__":
    asyncio.run(main())
