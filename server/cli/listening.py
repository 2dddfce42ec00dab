"""Listening before anything starts, and saying so only once it is true."""

from __future__ import annotations

import socket
from collections.abc import Callable

import uvicorn


class BannerServer(uvicorn.Server):
    """uvicorn's server, calling ``on_listening`` once the app has started and the socket
    accepts connections (never before, and never when start-up failed)."""

    def __init__(self, config: uvicorn.Config, on_listening: Callable[[], None]) -> None:
        super().__init__(config)
        self.on_listening = on_listening

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if not self.should_exit:
            self.on_listening()


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``; raises ``OSError`` (address in use, no such address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock
