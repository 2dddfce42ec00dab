"""A client that stops reading is closed by taskwire with 4008 and its resume ``seq``, found by
its send blocking (``OH_WS_SEND_TIMEOUT``) well before its queue (``OH_WS_QUEUE_SIZE``) fills
and long before uvicorn's keepalive would drop it with 1011."""

from __future__ import annotations

import asyncio
import logging
import socket
from contextlib import AsyncExitStack
from pathlib import Path

from websockets.asyncio.client import connect

from taskwire.settings import Settings
from taskwire.stream import CloseCode
from tests.api.helpers import create
from tests.api.socket_client import (
    WAIT,
    Closed,
    next_frame,
    produce,
    read_until_closed,
    read_until_seq,
    socket_url,
    stored_seqs,
)
from tests.servers import isolated_settings, taskwire_server
from tests.stream.checks import assert_gapless

SOCKETS = 50
QUEUE = 200
RECEIVE_BUFFER = 32_768
"""Bytes the kernel buffers for each stuck client (the server's side still buffers a few MB)."""


def small_buffered_socket(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    return sock


async def test_fifty_clients_that_stop_reading_are_closed_4008_with_their_resume_seq(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, ws_queue_size=QUEUE, ws_send_timeout=0.5)
    async with taskwire_server(settings) as server, AsyncExitStack() as sockets:
        conversation = (await create(server, run=False))["id"]
        port = int(server.url.rsplit(":", 1)[1])
        clients = []
        for _ in range(SOCKETS):
            ws = await sockets.enter_async_context(connect(
                socket_url(server, conversation), sock=small_buffered_socket(port),
                max_queue=1, compression=None, ping_interval=None, close_timeout=1,
            ))
            await next_frame(ws)  # full_state; from here on the client reads nothing
            clients.append(ws)
        live = server.app.state.subscriber_limit
        produced = 0
        while live.active:  # events until every client's buffers are full, then silence
            assert produced < QUEUE, "clients were left stuck with room in their queues"
            await produce(server, conversation, 5, noise=100_000)
            produced += 5
            await asyncio.sleep(0.2)
        closes: list[Closed] = await asyncio.gather(*(read_until_closed(ws) for ws in clients))
        seqs = await stored_seqs(server, conversation)
        for closed in closes:
            assert closed.code == CloseCode.TOO_SLOW, closed
            resume = int(closed.reason.rsplit("after_seq=", 1)[1])
            assert_gapless(closed.frames, [s for s in seqs if s <= resume])
        resume = int(closes[0].reason.rsplit("after_seq=", 1)[1])
        async with connect(socket_url(server, conversation, resend_mode="since", after_seq=resume)) as ws:
            await next_frame(ws)
            rest = await asyncio.wait_for(read_until_seq(ws, seqs[-1]), WAIT)
        assert_gapless(rest, [s for s in seqs if s > resume])


async def test_an_agui_stream_whose_client_stops_reading_is_cut_off_and_resumes(tmp_path: Path) -> None:
    """Server-Sent Events have no close code: the stuck stream is ended, its subscriber place
    freed, and the client resumes from the last id it read, missing nothing."""
    settings = isolated_settings(tmp_path, ws_queue_size=QUEUE, ws_send_timeout=0.5)
    uvicorn_lines = Recorded()
    try:
        await cut_off_and_resume(settings, uvicorn_lines)
    finally:
        logging.getLogger("uvicorn.error").removeHandler(uvicorn_lines)
    # An expected outcome reads as one: taskwire's own line says why, at info; no error.
    assert not [r.getMessage() for r in uvicorn_lines.records if r.levelno >= logging.ERROR]


class Recorded(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def cut_off_and_resume(settings: Settings, uvicorn_lines: logging.Handler) -> None:
    async with taskwire_server(settings) as server:
        logging.getLogger("uvicorn.error").addHandler(uvicorn_lines)  # after uvicorn configured its logging
        conversation = (await create(server, run=False))["id"]
        port = int(server.url.rsplit(":", 1)[1])
        keys = server.settings.session_api_keys
        auth = f"X-Session-API-Key: {keys[0]}\r\n" if keys else ""
        stuck = small_buffered_socket(port)
        loop = asyncio.get_running_loop()
        await loop.sock_sendall(stuck, (
            f"GET /agui/{conversation} HTTP/1.1\r\nHost: test\r\nAccept: text/event-stream\r\n{auth}\r\n"
        ).encode())
        live = server.app.state.subscriber_limit
        for _ in range(100):
            if live.active:
                break
            await asyncio.sleep(0.05)
        produced = 0
        while live.active:  # from here on the client reads nothing
            assert produced < QUEUE, "the stuck stream was never cut off"
            await produce(server, conversation, 5, noise=100_000)
            produced += 5
            await asyncio.sleep(0.2)
        received = bytearray()
        while chunk := await asyncio.wait_for(loop.sock_recv(stuck, 1 << 20), WAIT):
            received.extend(chunk)  # what was buffered, then the end of the connection
        stuck.close()
        ids = [int(line[4:]) for line in received.decode(errors="replace").splitlines() if line.startswith("id: ")]
        seqs = await stored_seqs(server, conversation)
        assert ids and ids[-1] < seqs[-1], "the stuck client should have missed the newest events"
        # Resuming from the last id read brings the rest.
        rest: list[int] = []
        async with server.client.stream("GET", f"/agui/{conversation}", headers={"Last-Event-ID": str(ids[-1])}) as resumed:
            async with asyncio.timeout(WAIT):
                async for line in resumed.aiter_lines():
                    if line.startswith("id: "):
                        rest.append(int(line[4:]))
                        if rest[-1] >= seqs[-1]:
                            break
        assert rest[0] >= ids[-1] and rest[-1] == seqs[-1]  # an id is the seq the stream is complete through
