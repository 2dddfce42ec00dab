"""``AguiStream``: a conversation tree's AG-UI events over Server-Sent Events.

Only I/O lives here: it claims a subscriber place, subscribes, reads the snapshot (the log's
end, the tree, the root's usage), sends the run's message if it has one, then drives an
``EventStream`` (resume, view, order, gap fills: ``server/stream/``) with the WebSocket's pump
and writes what ``AguiProjection`` (``server/agui/``) makes of its frames. The client closing
the stream ends the stream, never the run. A client that takes no data for
``OH_WS_SEND_TIMEOUT`` is cut off, as a stuck socket is: its place and its queue are freed, and
it resumes with ``Last-Event-ID``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Awaitable, Callable, Sequence

from starlette.datastructures import State
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ..agui import KEEPALIVE, MEDIA_TYPE, AguiProjection, Frame, SubagentInfo, encode_frames
from .sockets import pump
from ..bus import Subscription
from ..errors import ConversationNotFound, Unavailable
from ..store import ConversationRecord, EventQuery, Store
from ..stream import CloseCode, EventStream, SubagentNode
from ..telemetry.logs import response_ended_early

log = logging.getLogger(__name__)

KEEPALIVE_SECONDS = 15.0
"""How often an idle stream sends a comment, so proxies keep it open."""

USAGE_SCAN_PAGES = 5
"""How far back a resumed stream looks for the root's usage (state updates, newest first)."""

_HEADERS = [
    (b"content-type", f"{MEDIA_TYPE}; charset=utf-8".encode()),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),  # nginx: pass events on as they come
]


class EventStreamResponse(Response):
    """How the OpenAPI schema names the AG-UI routes' answer (``AguiStream`` makes it)."""

    media_type = MEDIA_TYPE


class _Ended(Exception):
    """The stream has sent all it was opened for (its run ended, or the thread is idle)."""


class AguiStream(Response):
    """The response of an AG-UI route: a stream of one conversation tree.

    ``after_seq``: resume after it (``None``: from the log's end as the stream opens).
    ``run``: ``(runId, parentRunId)`` of the run this request starts with ``message`` (or with
    ``answers``, ``(request_id, PermissionAnswer body)`` pairs of a ``resume``); the stream
    ends when that run does. Without it the stream follows the thread: every run,
    until the client leaves (``until_idle``: until no run is going), the first run opened
    named ``first_run_id`` if given.
    """

    def __init__(
        self,
        state: State,
        conversation: ConversationRecord,
        *,
        after_seq: int | None,
        run: tuple[str, str | None] | None = None,
        message: str | None = None,
        first_run_id: str | None = None,
        until_idle: bool = False,
        answers: Sequence[tuple[str, dict[str, Any]]] = (),
    ) -> None:
        super().__init__(media_type=MEDIA_TYPE)
        self.answers = answers
        self.state = state
        self.conversation = conversation
        self.after_seq = after_seq
        self.run = run
        self.message = message
        self.first_run_id = first_run_id
        self.until_idle = until_idle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # A TaskwireError raised before the response starts reaches the app's error handlers
        # like a route's own, so a refused stream is an ordinary {"detail", "code"} answer.
        with self.state.subscriber_limit.claim() as admitted:
            if not admitted:
                raise Unavailable("too many live subscribers; retry later", code="too_many_subscribers", retry_after=1)
            await self._serve(receive, send)

    async def _serve(self, receive: Receive, send: Send) -> None:
        state, settings = self.state, self.state.settings
        store: Store = state.store
        root_id = self.conversation.root_id
        async with state.bus.subscribe(root_id, maxsize=settings.ws_queue_size) as subscription:
            # Subscribed before anything is read: what is published from now on is queued,
            # what came before is in the store, and the stream drops the overlap.
            log_end = await store.last_seq(root_id)
            tree = await store.tree(root_id)
            if not tree:
                raise ConversationNotFound(root_id)  # deleted since the route found it
            after = log_end if self.after_seq is None else min(self.after_seq, log_end)
            root_usage = await usage_at(store, tree[0], after, log_end)
            if self.message is not None:
                await state.runtime.send_message(self.conversation.id, self.message)
            for request_id, answer in self.answers:  # after subscribing: the run they free is streamed
                await state.runtime.answer_permission(self.conversation.id, request_id, answer, "agui")
            subagents = [r for r in tree if not r.is_root]
            stream = EventStream(
                root_id,
                after_seq=after,
                snapshot_seq=log_end,
                forwarding=settings.forward_subagent_events,
                tree=[SubagentNode.from_conversation(r) for r in subagents],
                max_pending=settings.ws_queue_size,
            )
            projection = AguiProjection(
                self.conversation.id,
                after_seq=after,
                subagents=[SubagentInfo.from_conversation(r) for r in subagents],
                root_usage=root_usage,
                run_id=self.first_run_id,
                sent_message=self.message,
                answering=[request_id for request_id, _ in self.answers],
            )
            await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
            writer = _Writer(send, settings.ws_send_timeout)
            if self.run is not None:
                await writer.frames(projection.start_run(*self.run))
                if self.message is None and not self.answers:
                    waiting = await state.runtime.permissions(self.conversation.id)
                    if waiting or tree[0].status != "running":  # no record to come would end this run
                        await writer.frames(projection.end_at_once(waiting))
                        await writer.end()
                        return

            async def deliver(frames: list[str]) -> None:
                out: list[Frame] = []
                for frame in frames:
                    out.extend(projection.receive(frame))
                await writer.frames(out)
                if self.run is not None and projection.runs_ended:
                    raise _Ended
                if self.until_idle and not stream.replaying and not projection.run_open:
                    raise _Ended

            await self._stream(stream, projection, subscription, writer, deliver, receive)
            await writer.end()

    async def _stream(
        self,
        stream: EventStream,
        projection: AguiProjection,
        subscription: Subscription,
        writer: _Writer,
        deliver: Callable[[list[str]], Awaitable[None]],
        receive: Receive,
    ) -> None:
        """Pump until the stream has sent what it was opened for, closes, or the client leaves."""
        pumping = asyncio.create_task(pump(stream, subscription, self.state.store, deliver))
        leaving = asyncio.create_task(_client_leaves(receive))
        beating = asyncio.create_task(writer.keepalive())
        try:
            # The keepalive ends only by stalling: then the client is stuck, not gone.
            done, _ = await asyncio.wait({pumping, leaving, beating}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (pumping, leaving, beating):
                task.cancel()
            await asyncio.gather(pumping, leaving, beating, return_exceptions=True)
        if writer.stalled:
            self.state.subscriber_limit.record_close(CloseCode.TOO_SLOW)
            response_ended_early()  # the response cannot be ended: the client reads nothing
            log.info("AG-UI stream of %s: the client took no data for %.1f s; cut off",
                     self.conversation.id, self.state.settings.ws_send_timeout)
            return
        if pumping not in done:
            return  # the client left
        error = pumping.exception()
        if error is None:  # the EventStream closed: the client fell a whole queue behind
            code, reason = pumping.result()
            self.state.subscriber_limit.record_close(code)  # counted on /metrics, as sockets' are
            await writer.frames(projection.stream_closed("too_slow", reason))
        elif not isinstance(error, (_Ended, _Stalled, OSError)):
            log.error("AG-UI stream of %s failed", self.conversation.id, exc_info=error)


class _Stalled(Exception):
    """A write made no progress for the send timeout: the client stopped reading."""


class _Writer:
    """Writes to the response; the pump and the keepalive share it. A write that waits longer
    than ``timeout`` for the client to drain the connection marks the writer ``stalled``, and
    it writes nothing more (uvicorn then drops the connection)."""

    def __init__(self, send: Send, timeout: float) -> None:
        self._send = send
        self._timeout = timeout
        self._lock = asyncio.Lock()
        self.stalled = False

    async def frames(self, frames: list[Frame]) -> None:
        if frames:
            await self.write(encode_frames(frames))

    async def write(self, data: bytes) -> None:
        async with self._lock:
            if self.stalled:
                raise _Stalled
            try:
                # One timer per write, not per frame: a write carries a whole batch.
                async with asyncio.timeout(self._timeout):
                    await self._send({"type": "http.response.body", "body": data, "more_body": True})
            except TimeoutError:
                self.stalled = True
                raise _Stalled from None

    async def keepalive(self) -> None:
        while True:
            await asyncio.sleep(KEEPALIVE_SECONDS)
            await self.write(KEEPALIVE)

    async def end(self) -> None:
        async with self._lock:
            if self.stalled:
                return
            try:
                await self._send({"type": "http.response.body", "body": b"", "more_body": False})
            except OSError:
                pass  # the client is gone


async def _client_leaves(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def usage_at(store: Store, root: ConversationRecord, seq: int, log_end: int) -> dict[str, int] | None:
    """The root's usage as of ``seq``: its record's when nothing came after, else the last
    ``usage`` update at or before ``seq`` (``None`` if it lies too far back to look)."""
    if seq >= log_end:
        return root.usage.model_dump()
    zero = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "llm_calls": 0}
    if seq == 0:
        return zero
    query = EventQuery(root.id, conversation_ids=[root.id], kinds=["ConversationStateUpdateEvent"], until_seq=seq)
    page_id = None
    for _ in range(USAGE_SCAN_PAGES):
        page = await store.search(query, page_id=page_id, order="TIMESTAMP_DESC")
        for record in page.items:
            event = json.loads(record.json)
            if event.get("key") == "usage" and isinstance(event.get("value"), dict):
                return event["value"]
        page_id = page.next_page_id
        if page_id is None:
            return zero
    return None
