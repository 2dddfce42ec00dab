"""A WebSocket client in its own process, so it never competes with the server's event loop.

Prints one JSON line: frames received, seconds from the first frame to the last, and
emit-to-client latencies (from each event's ``timestamp``) as p50/p99 in milliseconds.

    python bench/ws_client.py ws://127.0.0.1:8000/sockets/events/ID --until-kind MessageEvent --count 10000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import datetime

import websockets


def _ts(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--count", type=int, default=0, help="stop after this many events with a seq")
    parser.add_argument("--until-finished", action="store_true", help="stop when the root's status becomes finished")
    parser.add_argument("--latency", action="store_true", help="measure emit-to-client latency")
    args = parser.parse_args()
    latencies: list[float] = []
    seen = 0
    first = last = 0.0
    async with websockets.connect(args.url, max_size=None, compression=None) as socket:
        # The server subscribes before its first frame (full_state): only then may the run start.
        pending = [await socket.recv()]
        print("connected", flush=True)
        while True:
            frame = pending.pop() if pending else await socket.recv()
            now = time.time()
            event = json.loads(frame)
            if "seq" not in event or event.get("key") == "full_state":
                continue
            if seen == 0:
                first = now
            seen += 1
            last = now
            if args.latency:
                latencies.append((now - _ts(event["timestamp"])) * 1000)
            if args.count and seen >= args.count:
                break
            if args.until_finished and event.get("key") == "status" and event.get("value") in ("finished", "error") and "subagent_id" not in event:
                break
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else None  # noqa: E731
    print(json.dumps({"frames": seen, "seconds": last - first, "p50_ms": pick(0.5), "p99_ms": pick(0.99)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
