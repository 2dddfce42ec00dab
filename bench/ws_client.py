"""A WebSocket client in its own process, so it never competes with the server's event loop.

Prints one JSON line: frames received, seconds from the first frame to the last, and
emit-to-client latencies (from each event's ``timestamp``) as p50/p99 in milliseconds.

    python bench/ws_client.py ws://127.0.0.1:8000/sockets/events/ID --until-kind MessageEvent --count 10000

With ``--fleet``, it reads one URL a line from stdin (until an empty line), watches them all at
once, prints ``connected`` once every socket has its first frame, and at the end the same line
for all of them together (live events only: not what each socket's replay sends), plus ``first``/``last`` (wall-clock seconds) and, with
``--latency``, the sorted latencies under ``latencies_ms`` (so several fleets can be merged).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import datetime
from typing import Any

import websockets


def _ts(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


class Tally:
    """What the sockets of one process received."""

    def __init__(self, latency: bool) -> None:
        self.latency = latency
        self.latencies: list[float] = []
        self.seen = 0
        self.first = self.last = 0.0

    def count(self, event: dict[str, Any], now: float) -> None:
        if self.seen == 0:
            self.first = now
        self.seen += 1
        self.last = now
        if self.latency:
            self.latencies.append((now - _ts(event["timestamp"])) * 1000)

    def summary(self, *, raw: bool = False) -> dict[str, Any]:
        self.latencies.sort()
        pick = lambda q: self.latencies[min(len(self.latencies) - 1, int(q * len(self.latencies)))] if self.latencies else None  # noqa: E731
        out = {"frames": self.seen, "seconds": self.last - self.first, "p50_ms": pick(0.5), "p99_ms": pick(0.99)}
        if raw:
            out.update(first=self.first, last=self.last, latencies_ms=self.latencies)
        return out


async def open_watch(url: str) -> tuple[Any, str]:
    """A socket on ``url`` and its first frame: the server subscribes before it sends it."""
    socket = await websockets.connect(url, max_size=None, compression=None, open_timeout=120)
    return socket, await socket.recv()


async def watch(
    socket: Any, first: str, tally: Tally, *, count: int = 0, until_finished: bool = False, live_only: bool = False
) -> None:
    """Count the socket's events (those with a ``seq``) until ``count`` or the root's end;
    ``live_only``: not those its replay sends (up to ``full_state``'s ``last_seq``), which were
    stored before the socket was there."""
    pending = [first]
    seen = 0
    replayed = 0
    async with socket:
        while True:
            frame = pending.pop() if pending else await socket.recv()
            now = time.time()
            event = json.loads(frame)
            if event.get("key") == "full_state":
                replayed = event["value"].get("last_seq") or 0 if live_only else 0
                continue
            if "seq" not in event or event["seq"] <= replayed:
                continue
            tally.count(event, now)
            seen += 1
            if count and seen >= count:
                break
            if until_finished and event.get("key") == "status" and event.get("value") in ("finished", "error") and "subagent_id" not in event:
                break


async def fleet(args: argparse.Namespace) -> None:
    urls = []
    for line in sys.stdin:
        if not line.strip():
            break
        urls.append(line.strip())
    tally = Tally(args.latency)
    opened = []
    for n in range(0, len(urls), 50):  # in waves: a server's accept backlog is finite
        opened += await asyncio.gather(*(open_watch(url) for url in urls[n : n + 50]))
    print("connected", flush=True)
    await asyncio.gather(*(watch(s, f, tally, count=args.count, until_finished=args.until_finished, live_only=True) for s, f in opened))
    print(json.dumps(tally.summary(raw=True)), flush=True)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url", nargs="?")
    parser.add_argument("--count", type=int, default=0, help="stop after this many events with a seq")
    parser.add_argument("--until-finished", action="store_true", help="stop when the root's status becomes finished")
    parser.add_argument("--latency", action="store_true", help="measure emit-to-client latency")
    parser.add_argument("--fleet", action="store_true", help="watch every URL read from stdin")
    args = parser.parse_args()
    if args.fleet:
        await fleet(args)
        return
    tally = Tally(args.latency)
    socket, first = await open_watch(args.url)
    print("connected", flush=True)
    await watch(socket, first, tally, count=args.count, until_finished=args.until_finished)
    print(json.dumps(tally.summary()), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
