"""A WebSocket client written by hand, for what no well-behaved library sends: frames that lie
about their size, invalid UTF-8, resets. Tests use ``websockets`` for everything else.

A real client would hold a 15 MB message in memory to send it; a hundred of them would
measure the test, not the server. ``RawSocket`` streams one shared buffer instead.
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import struct
from dataclasses import dataclass

TEXT, BINARY, CONTINUATION, CLOSE = 0x1, 0x2, 0x0, 0x8


def frame(opcode: int, payload: bytes = b"", *, fin: bool = True, length: int | None = None, masked: bool = True) -> bytes:
    """A client frame. ``length`` may claim more than ``payload`` holds (the rest is sent
    later, or never); the mask is all zeros, so the payload goes as it is."""
    size = len(payload) if length is None else length
    first = (0x80 if fin else 0) | opcode
    mask_bit = 0x80 if masked else 0
    if size < 126:
        header = struct.pack("!BB", first, mask_bit | size)
    elif size < 1 << 16:
        header = struct.pack("!BBH", first, mask_bit | 126, size)
    else:
        header = struct.pack("!BBQ", first, mask_bit | 127, size)
    return header + (b"\0\0\0\0" if masked else b"") + payload


@dataclass
class Closed:
    """The close frame the server sent (``code`` None: the connection ended without one)."""

    code: int | None
    reason: str = ""


class RawSocket:
    """One WebSocket connection over a plain TCP stream."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int, path: str, headers: dict[str, str] | None = None) -> RawSocket:
        """Connect and complete the opening handshake (101 expected)."""
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        lines = [
            f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Upgrade: websocket", "Connection: Upgrade",
            f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}", "Sec-WebSocket-Version: 13",
            *(f"{k}: {v}" for k, v in (headers or {}).items()),
        ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        response = await reader.readuntil(b"\r\n\r\n")
        status = response.split(b"\r\n", 1)[0]
        if b" 101 " not in status:
            writer.close()
            raise AssertionError(f"handshake refused: {status!r}")
        return cls(reader, writer)

    async def send(self, data: bytes) -> bool:
        """Write ``data``; False once the server has closed the connection."""
        try:
            self.writer.write(data)
            await self.writer.drain()
            return True
        except (ConnectionError, OSError):
            return False

    async def stream(self, chunk: bytes, total: int) -> int:
        """Send ``chunk`` again and again, ``total`` bytes in all or until the server closes;
        returns the bytes it took."""
        sent = 0
        while sent < total:
            piece = chunk[: total - sent]
            if not await self.send(piece):
                break
            sent += len(piece)
        return sent

    async def read_frame(self) -> tuple[int, bytes] | None:
        """The next server frame ``(opcode, payload)``; ``None`` at the end of the stream."""
        try:
            first, second = await self.reader.readexactly(2)
            size = second & 0x7F
            if size == 126:
                (size,) = struct.unpack("!H", await self.reader.readexactly(2))
            elif size == 127:
                (size,) = struct.unpack("!Q", await self.reader.readexactly(8))
            return first & 0x0F, await self.reader.readexactly(size)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            return None

    async def until_closed(self) -> Closed:
        """Read until the server's close frame (skipping data frames)."""
        while (received := await self.read_frame()) is not None:
            opcode, payload = received
            if opcode == CLOSE:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                return Closed(code, payload[2:].decode(errors="replace"))
        return Closed(None)

    def reset(self) -> None:
        """Drop the connection with a TCP reset, as a crashed client or a cut network does."""
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass
