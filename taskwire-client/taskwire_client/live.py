"""``LiveEvents``: one conversation's events over the WebSocket, as an async iterator that
survives disconnects.

Every stored event arrives once, in ``seq`` order, across any number of drops and server
restarts: after a drop it reconnects with ``resend_mode=since&after_seq=<last seq seen>`` and
drops anything at or below that seq. Events without a ``seq`` (streaming deltas, each
connection's ``full_state`` first frame) are live only: what streamed while disconnected is gone,
and a new ``full_state`` comes with every connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote, urlencode

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from taskwire_client.errors import StreamRefused, Unreachable
from taskwire_client.frames import RUN_ENDS, is_full_state, parse_frame, root_status
from taskwire_client.events import AgentErrorEvent, Event, StreamingDeltaEvent
from taskwire_client.close_codes import CloseCode

REFUSALS = frozenset({CloseCode.BAD_REQUEST, CloseCode.UNAUTHORIZED, CloseCode.UNKNOWN_CONVERSATION})
"""Close codes that retrying cannot fix; anything else (a restart, 4008 too slow, 4029 too many
subscribers, 1011) is a drop, and the stream resumes."""

FIRST_DELAY = 0.1
MAX_DELAY = 2.0


class LiveEvents:
    """Typed events of one conversation, live. Use as ``async for event in live`` (it closes
    its socket when the loop ends), or ``async with live: async for ...`` to stop early.

    ``until_run_ends``: stop after the event that ends the root conversation's current run
    (``finished``, ``error`` or ``paused``), or at once if it had ended before the socket
    opened and nothing is left to replay. ``retry_for``: seconds without a connection before
    giving up with ``Unreachable`` (``None``: forever); a server that never answered at all is
    ``Unreachable`` at once.
    """

    def __init__(
        self,
        ws_base: str,
        conversation_id: str,
        *,
        headers: dict[str, str] | None = None,
        after_seq: int = 0,
        subagents: str = "all",
        parent_tool_use_id: str | None = None,
        event_schema: int | None = None,
        deltas: bool = True,
        until_run_ends: bool = False,
        retry_for: float | None = 60.0,
    ) -> None:
        self.ws_base = ws_base.rstrip("/")
        self.conversation_id = conversation_id
        self.headers = dict(headers or {})
        self.query: dict[str, Any] = {"subagents": subagents}
        if parent_tool_use_id is not None:
            self.query["parent_tool_use_id"] = parent_tool_use_id
        if event_schema is not None:
            self.query["event_schema"] = event_schema
        self.deltas = deltas
        self.until_run_ends = until_run_ends
        self.retry_for = retry_for
        self.last_seq = after_seq
        """The last stored event taken: where the next connection resumes."""
        self.full_state: dict[str, Any] | None = None
        """The latest connection's first frame (status, ``last_seq``, usage, the sub-agent tree)."""
        self.status: str | None = None
        """The root's status as the stream has told it so far."""
        self.error: str | None = None
        """Why the root's latest run could not go on: its last ``AgentErrorEvent``'s message."""
        self.connections = 0
        """How many times a socket opened (1 + reconnects)."""
        self._snapshot_seq = 0
        self._events = self._run()

    def url(self) -> str:
        """The socket URL for the next connection: the whole log, or resuming past ``last_seq``."""
        resume = {"resend_mode": "since", "after_seq": self.last_seq} if self.last_seq else {"resend_mode": "all"}
        return f"{self.ws_base}/sockets/events/{quote(self.conversation_id, safe='')}?{urlencode({**resume, **self.query})}"

    def __aiter__(self) -> LiveEvents:
        return self

    async def __anext__(self) -> Event:
        return await self._events.__anext__()

    async def aclose(self) -> None:
        """Close the socket; iteration ends."""
        await self._events.aclose()

    async def __aenter__(self) -> LiveEvents:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _run(self) -> AsyncIterator[Event]:
        loop = asyncio.get_running_loop()
        failing_since: float | None = None
        attempt = 0
        while True:
            try:
                async with connect(self.url(), additional_headers=self.headers, max_size=None) as socket:
                    self.connections += 1
                    async for data in socket:
                        event = parse_frame(data)
                        if event is None or not self._take(event):
                            continue
                        if is_full_state(event):
                            failing_since = None  # served again: the clock of retry_for restarts
                        elif event.seq is not None:
                            attempt = 0
                        yield event
                        if self._run_ended():
                            return
            except ConnectionClosed as exc:
                if exc.rcvd is not None and exc.rcvd.code in REFUSALS:
                    raise StreamRefused(exc.rcvd.code, exc.rcvd.reason) from None
            except (OSError, InvalidHandshake, TimeoutError) as exc:
                if not self.connections:
                    raise Unreachable(f"cannot reach {self.ws_base}: {exc}") from exc
            # A drop: the server went away, restarted, or closed a socket it could not serve.
            now = loop.time()
            failing_since = now if failing_since is None else failing_since
            if self.retry_for is not None and now - failing_since > self.retry_for:
                raise Unreachable(f"{self.ws_base} did not come back within {self.retry_for:g} s")
            await asyncio.sleep(min(MAX_DELAY, FIRST_DELAY * 2**attempt))
            attempt += 1

    def _take(self, event: Event) -> bool:
        """Record what ``event`` says; False for a frame not to hand on (seen already, or a
        delta nobody asked for)."""
        if is_full_state(event):
            state = event.value if isinstance(event.value, dict) else {}  # type: ignore[attr-defined]
            self.full_state = state
            self._snapshot_seq = int(state.get("last_seq") or 0)
            self.status = state.get("status") or self.status
            return True
        if event.seq is not None:
            if event.seq <= self.last_seq:
                return False
            self.last_seq = event.seq
        elif isinstance(event, StreamingDeltaEvent) and not self.deltas:
            return False
        status = root_status(event)
        if status is not None:
            self.status = status
            if status == "running":
                self.error = None  # a new run: an earlier run's error is not this one's reason
        elif isinstance(event, AgentErrorEvent) and event.subagent_id is None:
            self.error = event.error
        return True

    def _run_ended(self) -> bool:
        # Caught up with the log's end as the socket opened: the latest status is the current one.
        return self.until_run_ends and self.status in RUN_ENDS and self.last_seq >= self._snapshot_seq
