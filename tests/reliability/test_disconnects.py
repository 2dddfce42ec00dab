"""A client leaving is no error: a thousand sockets reset at every step of their life leave no
traceback in the server's log, and the server serves the next client."""

from __future__ import annotations

import asyncio
import json

from tests.reliability.conftest import KEY, log_problems
from tests.reliability.raw_socket import TEXT, RawSocket, frame
from tests.servers import ServerProcess

SOCKETS = 1_000
AT_ONCE = 100


async def leave(server: ServerProcess, path: str, when: int) -> None:
    """Reset right after the handshake, after the first frame, or while authenticating by frame."""
    headers = {} if when == 2 else {"X-Session-API-Key": KEY}
    ws = await RawSocket.open(server.port, path, headers)
    if when == 1:
        await ws.read_frame()
    elif when == 2:
        await ws.send(frame(TEXT, json.dumps({"type": "auth", "session_api_key": KEY}).encode()))
    ws.reset()


async def test_a_thousand_abrupt_disconnects_write_no_traceback(served: ServerProcess) -> None:
    conversation = (await served.client.post("/api/conversations", json={"initial_message": "hi"})).json()["id"]
    path = f"/sockets/events/{conversation}"
    for start in range(0, SOCKETS, AT_ONCE):
        await asyncio.gather(*(leave(served, path, n % 3) for n in range(start, start + AT_ONCE)))
    ws = await RawSocket.open(served.port, path, {"X-Session-API-Key": KEY})
    received = await ws.read_frame()
    await ws.close()
    assert received is not None and json.loads(received[1])["key"] == "full_state"
    await served.stop()  # flushes the log
    assert log_problems(served) == []
