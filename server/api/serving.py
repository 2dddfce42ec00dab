"""How a taskwire app is served under uvicorn: the one ``uvicorn_config`` (used by ``taskwire
serve`` and the tests alike) and the WebSocket protocol it installs.

``FrameLimitedWebSocketProtocol`` is uvicorn's Sans-I/O websockets protocol with three changes
a server facing hostile clients needs:

- **Small frames before authentication.** A socket accepts client messages of at most
  ``PRE_AUTH_MAX_MESSAGE`` bytes until the application lifts the limit to ``OH_MAX_BODY_BYTES``
  (``lift_frame_limit(websocket)``, once the key is checked). The limit is read from each frame
  header before its payload is buffered, so a 15 MB "auth" frame costs nothing: the socket is
  closed with 1009 at its first bytes.
- **A close never waits for a client that stopped reading.** uvicorn's ``send`` waits for the
  write buffer to drain, so closing a stuck client would wait forever; the close frame is
  queued behind the data instead, and the connection is dropped if the client has not answered
  it within the close timeout.
- **Invalid UTF-8 in a text frame** closes with 1007 like uvicorn does, without logging a
  traceback for what is a client's mistake.
"""

from __future__ import annotations

from typing import Any

import uvicorn
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.frames import CloseCode as WSCloseCode

from ..settings import Settings
from ..telemetry.logs import install_ended_early_filter

PRE_AUTH_MAX_MESSAGE = 16_384
"""Bytes a client message may have before the socket is authenticated: an ``auth`` frame is a
few dozen bytes plus the key."""

LIFT_EXTENSION = "taskwire.lift_frame_limit"
"""Scope extension (a callable) that raises a socket's message limit to ``OH_MAX_BODY_BYTES``."""


def uvicorn_config(app: Any, settings: Settings, *, host: str | None = None, port: int | None = None,
                   **options: Any) -> uvicorn.Config:
    """The uvicorn configuration for ``app``: inbound WebSocket messages capped at
    ``OH_MAX_BODY_BYTES`` (and far less before authentication). ``options`` go to uvicorn."""
    values: dict[str, Any] = {"log_level": "warning", "lifespan": "on", **options}
    install_ended_early_filter()  # a slow AG-UI client cut off is logged at info, not as uvicorn's error
    return uvicorn.Config(
        app,
        host=settings.host if host is None else host,
        port=settings.port if port is None else port,
        ws=FrameLimitedWebSocketProtocol,
        ws_max_size=settings.max_body_bytes,
        **values,
    )


def lift_frame_limit(scope: Any) -> None:
    """Let an authenticated socket send messages up to the server's limit. A no-op under a
    server that does not offer the extension."""
    lift = (scope.get("extensions") or {}).get(LIFT_EXTENSION)
    if lift is not None:
        lift()


class FrameLimitedWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's Sans-I/O WebSocket protocol with a pre-auth message limit, closes that do not
    wait for the write buffer, and quiet UTF-8 failures (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        full = self.config.ws_max_size
        self.conn.max_message_size = min(PRE_AUTH_MAX_MESSAGE, full)

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)
        if scope is not None:  # the handshake was accepted: the app task starts next
            scope["extensions"][LIFT_EXTENSION] = self._lift

    def _lift(self) -> None:
        self.conn.max_message_size = self.config.ws_max_size

    async def send(self, message: Any) -> None:
        closing = message["type"] == "websocket.close" and self.handshake_complete and not self.close_sent
        if closing:
            # uvicorn waits for the write buffer to drain before any send; a client that does
            # not read never drains it. The close frame goes behind the queued data instead.
            self.writable.set()
        await super().send(message)
        if closing and self.close_timer is not None:
            # A client that takes neither its data nor the close frame is dropped, not
            # left holding the buffer (uvicorn's timer closes gracefully, which flushes first).
            self.close_timer.cancel()
            self.close_timer = self.loop.call_later(self.close_timeout, self.transport.abort)

    def send_receive_event_to_app(self) -> None:
        if self.curr_msg_data_type == "text" and not self.close_sent:
            try:
                b"".join(self.frames).decode()
            except UnicodeDecodeError:
                self.frames = []
                self.conn.send_close(WSCloseCode.INVALID_DATA, "text frame is not valid UTF-8")
                self.handle_parser_exception()
                return
        super().send_receive_event_to_app()
