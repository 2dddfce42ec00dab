"""An AG-UI SSE client in its own process, so it never competes with the server's event loop.

Prints "connected" once the response starts, then one JSON line: AG-UI events received, the
last SSE id (the seq the stream is complete through), bytes, and seconds from the first event
to the end of the stream. It counts without parsing each event (the server's cost is measured,
not this client's).

    python bench/sse_client.py http://127.0.0.1:8000/agui/ID?until=idle
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

import httpx


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    args = parser.parse_args()
    events = received = 0
    first = last = 0.0
    tail = carry = b""
    marker = b"\ndata: "  # once per event: JSON never holds a raw newline
    async with httpx.AsyncClient(timeout=None) as client:
        async with client.stream("GET", args.url, headers={"Accept": "text/event-stream"}) as response:
            response.raise_for_status()
            print("connected", flush=True)
            async for chunk in response.aiter_raw():
                if not first:
                    first = time.perf_counter()
                window = carry + chunk
                events += window.count(marker)
                carry = window[-(len(marker) - 1) :]  # too short to hold a whole marker twice
                received += len(chunk)
                tail = (tail + chunk)[-4096:]
            last = time.perf_counter()
    ids = [line for line in tail.split(b"\n") if line.startswith(b"id: ")]
    last_id = int(ids[-1][4:]) if ids else 0
    print(json.dumps({"events": events, "last_id": last_id, "bytes": received, "seconds": last - first}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
