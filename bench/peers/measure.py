"""The client both servers get: the same requests, the same timings, only the routes' few
differences spelled out in a ``Target``.

Both servers serve ``GET /api/conversations/{id}/events/search`` and ``/count`` with the same
filters, a socket at ``/sockets/events/{id}`` whose first frame is a state update and which
replays the log with ``resend_mode=all``, and ``POST /api/conversations/{id}/events`` to send a
user message without running the agent (``run: false``). They differ in a message's body (a
string for taskwire, a list of content blocks for OpenHands) and in the cursor of a page from
the middle (taskwire's ``after_seq``, OpenHands' ``page_id``: the id of the event it starts at).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import websockets

from workload import RARE_WORD

PAGE = 100
REPEAT_MAX = 20  # timed runs of a request, at most...
REPEAT_SECONDS = 10.0  # ...or as many as fit in this time (at least 3)
LIVE_MESSAGES = 200


@dataclass
class Target:
    """One server under test, as the client sees it."""

    name: str
    base: str
    conversation: str
    middle: dict[str, Any]
    """Query parameters of the page that starts in the middle of the log."""
    message: Callable[[str], dict[str, Any]]
    """The body of ``POST .../events`` sending this text, without a run."""

    @property
    def events(self) -> str:
        return f"/api/conversations/{self.conversation}/events"

    def socket(self, **params: str) -> str:
        query = "&".join(f"{k}={v}" for k, v in params.items())
        return f"{self.base.replace('http', 'ws', 1)}/sockets/events/{self.conversation}" + (f"?{query}" if query else "")


@dataclass
class Timing:
    """Milliseconds of repeated runs of one request, and what the last one answered."""

    runs: list[float] = field(default_factory=list)
    answer: Any = None

    @property
    def p50(self) -> float:
        return statistics.median(self.runs)


async def first_response(target: Target, started: float, timeout: float) -> float:
    """Seconds from ``started`` (the process's start) to the first 200 from the events search."""
    async with httpx.AsyncClient(base_url=target.base, timeout=timeout) as client:
        deadline = started + timeout
        while time.perf_counter() < deadline:
            try:
                response = await client.get(f"{target.events}/search", params={"limit": PAGE})
                if response.status_code == 200:
                    return time.perf_counter() - started
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.02)
    raise TimeoutError(f"{target.name}: no events response within {timeout:.0f} s")


async def timed(client: httpx.AsyncClient, path: str, params: dict[str, Any]) -> Timing:
    """The request run up to ``REPEAT_MAX`` times (at least 3, within ``REPEAT_SECONDS``)."""
    timing = Timing()
    began = time.perf_counter()
    while len(timing.runs) < 3 or (len(timing.runs) < REPEAT_MAX and time.perf_counter() - began < REPEAT_SECONDS):
        t = time.perf_counter()
        response = await client.get(path, params=params)
        timing.runs.append((time.perf_counter() - t) * 1000)
        response.raise_for_status()
        timing.answer = response.json()
    return timing


async def reads(target: Target) -> dict[str, Timing]:
    """Pages (first, middle, newest), a count by kind, and the rare word's first page."""
    search = f"{target.events}/search"
    async with httpx.AsyncClient(base_url=target.base, timeout=3600) as client:
        return {
            "page_first": await timed(client, search, {"limit": PAGE}),
            "page_middle": await timed(client, search, {"limit": PAGE, **target.middle}),
            "page_newest": await timed(client, search, {"limit": PAGE, "sort_order": "TIMESTAMP_DESC"}),
            "count_kind": await timed(client, f"{target.events}/count", {"kind": "ObservationEvent"}),
            "search_rare": await timed(client, search, {"limit": PAGE, "body": RARE_WORD}),
        }


def _is_state_frame(frame: str | bytes) -> bool:
    return '"ConversationStateUpdateEvent"' in (frame if isinstance(frame, str) else frame.decode())


async def replay(target: Target, count: int) -> dict[str, Any]:
    """The whole log over one socket: seconds from opening it to the ``count``-th event."""
    began = time.perf_counter()
    received = 0
    async with websockets.connect(target.socket(resend_mode="all"), max_size=None, compression=None,
                                  open_timeout=3600, ping_interval=None) as socket:
        first = await socket.recv()  # both servers open with a state update, not a log event
        assert _is_state_frame(first), first[:200]
        while received < count:
            await socket.recv()
            received += 1
    seconds = time.perf_counter() - began
    return {"events": received, "seconds": seconds, "rate": received / seconds}


async def live(target: Target, tag: str, messages: int = LIVE_MESSAGES) -> dict[str, Any]:
    """POST a message, time its frame's arrival on an open socket; ``messages`` times, one by one."""
    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=target.base, timeout=60) as client, \
            websockets.connect(target.socket(), max_size=None, compression=None, ping_interval=None) as socket:
        await socket.recv()  # the state update: subscribed from here on
        for n in range(messages):
            marker = f"live-{tag}-{n}-end"
            began = time.perf_counter()
            post = asyncio.create_task(client.post(target.events, json=target.message(f"message {marker}")))
            while True:
                frame = await asyncio.wait_for(socket.recv(), 60)
                if marker in (frame if isinstance(frame, str) else frame.decode()):
                    break
            latencies.append((time.perf_counter() - began) * 1000)
            (await post).raise_for_status()
    latencies.sort()
    return {"p50": statistics.median(latencies), "p99": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]}
