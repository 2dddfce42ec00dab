"""Before a socket authenticates, nothing big is held: a hundred clients each sending a
15 MB "auth" frame (in one frame, or in fragments) leave the server's memory where it was."""

from __future__ import annotations

import asyncio
import json

from tests.reliability.conftest import KEY, reset_peak, rss_mb
from tests.reliability.raw_socket import CONTINUATION, TEXT, RawSocket, frame
from tests.servers import ServerProcess

SOCKETS = 100
FRAME_BYTES = 15_000_000
CHUNK = b"x" * 65_536
BOUND_MB = 50
REFUSED = {1009, None}
"""Message too big, or the reset that overtakes it."""


async def attack(server: ServerProcess, path: str, *, fragments: bool) -> tuple[int | None, int]:
    """Send a 15 MB auth message (one frame, or 8 KB fragments) as fast as the server takes it;
    returns the close code (``None`` when a reset came first: a server that closes while
    data still arrives resets) and the bytes the server took."""
    ws = await RawSocket.open(server.port, path)
    closing = asyncio.create_task(ws.until_closed())
    if fragments:
        piece = CHUNK[:8_192]
        sent, ok = 0, await ws.send(frame(TEXT, piece, fin=False))
        while ok and sent < FRAME_BYTES:
            sent += len(piece)
            ok = await ws.send(frame(CONTINUATION, piece, fin=False))
    else:
        await ws.send(frame(TEXT, b'{"type": "auth", "session_api_key": "', length=FRAME_BYTES))
        sent = await ws.stream(CHUNK, FRAME_BYTES)
    closed = await closing
    await ws.close()
    return closed.code, sent


async def test_huge_auth_frames_from_a_hundred_sockets_hold_no_memory(served: ServerProcess) -> None:
    conversation = (await served.client.post("/api/conversations", json={"run": False})).json()["id"]
    path = f"/sockets/events/{conversation}"
    # Warm up every code path the attack takes, then measure from here.
    assert (await attack(served, path, fragments=False))[0] in REFUSED
    assert served.process is not None
    pid = served.process.pid
    idle = rss_mb(pid)
    reset_peak(pid)
    results = await asyncio.gather(
        *(attack(served, path, fragments=n % 2 == 1) for n in range(SOCKETS))
    )
    peak = rss_mb(pid, "VmHWM")
    assert {code for code, _ in results} <= REFUSED
    assert max(sent for _, sent in results) < FRAME_BYTES, "the server took a whole 15 MB message"
    assert peak - idle < BOUND_MB, f"idle {idle:.0f} MB, peak {peak:.0f} MB under the attack"
    # And the server serves a client that logs in properly.
    ws = await RawSocket.open(served.port, path)
    await ws.send(frame(TEXT, json.dumps({"type": "auth", "session_api_key": KEY}).encode()))
    received = await ws.read_frame()
    assert received is not None and json.loads(received[1])["key"] == "full_state"
    await ws.close()
