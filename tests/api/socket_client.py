"""A real ``websockets`` client for the event socket, and a producer of events, for tests."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from taskwire.events import MessageEvent
from tests.api.helpers import all_events
from tests.servers import RunningServer

WAIT = 60.0  # seconds: generous, reached only when something is broken


@dataclass
class Closed:
    """How the server ended a socket, and what it sent before."""

    code: int | None
    reason: str
    frames: list[dict[str, Any]] = field(default_factory=list)


def socket_url(server: RunningServer, conversation_id: str, **params: Any) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"{server.ws_url}/sockets/events/{conversation_id}" + (f"?{query}" if query else "")


@asynccontextmanager
async def open_socket(
    server: RunningServer,
    conversation_id: str,
    *,
    headers: dict[str, str] | None = None,
    max_queue: int = 16,
    compress: bool = True,
    **params: Any,
) -> AsyncIterator[ClientConnection]:
    """A socket on a conversation (query ``params``), with the server's key in the header unless
    ``headers`` is given. ``max_queue``: frames the client buffers before it stops reading;
    ``compress``: offer permessage-deflate."""
    if headers is None:
        keys = server.settings.session_api_keys
        headers = {"X-Session-API-Key": keys[0]} if keys else {}
    url = socket_url(server, conversation_id, **params)
    compression = "deflate" if compress else None
    async with connect(url, additional_headers=headers, max_queue=max_queue, compression=compression) as ws:
        yield ws


async def next_frame(ws: ClientConnection) -> dict[str, Any]:
    return json.loads(await asyncio.wait_for(ws.recv(), WAIT))


async def read_until_seq(ws: ClientConnection, last_seq: int) -> list[dict[str, Any]]:
    """Frames until one with ``seq >= last_seq`` (included)."""
    frames = []
    while True:
        frame = await next_frame(ws)
        frames.append(frame)
        if frame.get("seq", -1) >= last_seq:
            return frames


async def read_until_closed(ws: ClientConnection) -> Closed:
    """Every frame until the server closes; the close code and reason."""
    frames = []
    try:
        while True:
            frames.append(await next_frame(ws))
    except ConnectionClosed as closed:
        rcvd = closed.rcvd
        return Closed(rcvd.code if rcvd else None, rcvd.reason if rcvd else "", frames)


async def produce(
    server: RunningServer, conversation_id: str, count: int, *, noise: int = 0, writers: int = 4, wait: bool = True
) -> None:
    """Emit ``count`` messages into a conversation's stream, from ``writers`` concurrent tasks
    (so appends commit in groups, as under a busy agent). ``noise``: bytes of random text per
    message, which no compression shrinks. ``wait=False``: every other message is emitted
    without waiting for it to be stored (as a peer agent's updates are)."""

    async def writer(index: int) -> None:
        for n in range(index, count, writers):
            text = f"message {n}" + (" " + base64.b64encode(os.urandom(noise * 3 // 4)).decode() if noise else "")
            await server.runtime.emit(conversation_id, MessageEvent(content=text), wait=wait or n % 2 == 0)

    await asyncio.gather(*(writer(i) for i in range(writers)))


async def stored_seqs(server: RunningServer, conversation_id: str, **params: Any) -> list[int]:
    """Every stored seq of a conversation, over REST."""
    return [e["seq"] for e in await all_events(server, conversation_id, **params)]
