"""``SocketWriter``: the one way frames reach an event socket, and how a stuck client is found.

A client that stops reading does not fail a send: the send waits for the write buffer to
drain, forever. The writer's watchdog notices a send that has made no progress for the write
timeout (``OH_WS_SEND_TIMEOUT``) and ends it with ``Stalled``; the socket then closes with
``TOO_SLOW`` and the ``seq`` to resume from. A watchdog per socket, not a timer per frame: a
timer per frame costs several times the send itself.
"""

from __future__ import annotations

import asyncio
from types import TracebackType

from starlette.websockets import WebSocket

STALL_TICKS = 3
"""Watchdog ticks (each half the timeout) a send may go without progress: a stall is declared
between one and one and a half timeouts after the client took its last frame."""


class Stalled(Exception):
    """The client took no data for the write timeout; every later send raises it at once.
    ``sent``: how many frames of the send that stalled went out."""

    def __init__(self, sent: int = 0) -> None:
        super().__init__(f"the client took no data ({sent} frames of this send went out)")
        self.sent = sent


class SocketWriter:
    """Writes frames to one socket, one writer at a time. Use as ``async with``: it runs the
    watchdog while the socket streams."""

    def __init__(self, websocket: WebSocket, timeout: float) -> None:
        self._websocket = websocket
        self._timeout = timeout
        self._lock = asyncio.Lock()
        self._progress = 0
        """Frames written so far: the watchdog's clock."""
        self._sender: asyncio.Task | None = None
        """The task inside a send, if any: the one the watchdog stops."""
        self._watchdog: asyncio.Task | None = None
        self.stalled = False
        self.batch_sent = 0
        """Frames of the last ``send_batch`` that went out (for ``EventStream.receive_stall``)."""

    async def __aenter__(self) -> SocketWriter:
        self._watchdog = asyncio.create_task(self._watch(), name="socket write watchdog")
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            await asyncio.gather(self._watchdog, return_exceptions=True)

    async def send_batch(self, frames: list[str]) -> None:
        """Send an ``EventStream`` batch in order; ``batch_sent`` counts what went out, also
        when this raises ``Stalled``."""
        self.batch_sent = 0  # before waiting for the lock: nothing of this batch is out yet
        await self._write(frames, counted=True)

    async def send_reply(self, frame: str) -> None:
        """Send a frame that is no stream event (an error frame, the first ``full_state``)."""
        await self._write([frame], counted=False)

    async def _write(self, frames: list[str], *, counted: bool) -> None:
        if self.stalled:
            raise Stalled(0)
        sent = 0
        async with self._lock:
            if self.stalled:
                raise Stalled(0)
            self._sender = asyncio.current_task()
            try:
                for frame in frames:
                    await self._websocket.send_text(frame)
                    self._progress += 1
                    sent += 1
                    if counted:
                        self.batch_sent = sent
            except asyncio.CancelledError:
                if not self.stalled:
                    raise
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()  # the watchdog's cancel, turned into the error it means
                raise Stalled(sent) from None
            finally:
                self._sender = None

    async def _watch(self) -> None:
        last, quiet = self._progress, 0
        while True:
            await asyncio.sleep(self._timeout / 2)
            busy = self._sender is not None
            quiet = quiet + 1 if busy and self._progress == last else 0
            last = self._progress
            if quiet >= STALL_TICKS and self._sender is not None:
                self.stalled = True
                self._sender.cancel()
                return
