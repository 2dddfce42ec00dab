"""WebSocket ``/sockets/events/{conversation_id}``: a conversation's events, live.

Only I/O lives here: it authenticates, subscribes, answers the ``EventStream``'s store queries,
hands it bus records and writes its frames. Resume, filters, order, gap fills and the
slow-client decision are the stream's (``server/stream/event_stream.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Awaitable, Callable

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from starlette.datastructures import State
from starlette.status import WS_1011_INTERNAL_ERROR

from server.api.auth import HEADER, api_key_valid
from server.bus import Overflow, Subscription
from server.errors import TaskwireError, Unauthorized
from server.events import ConversationStateUpdateEvent
from server.settings import Settings
from server.store import ConversationRecord, EventPage, EventQuery, Store
from server.store.base import MAX_PAGE
from server.stream import CloseCode, EventStream, SubagentNode
from server.api.errors import close_code_for
from server.stream.inbound import InboundAuth, InboundMessage, error_frame, parse_inbound
from server.stream.params import StreamParams

log = logging.getLogger(__name__)
router = APIRouter(tags=["sockets"])

AUTH_TIMEOUT = 10.0
"""Seconds a client without a header or query key has to send its ``auth`` frame."""

Send = Callable[[list[str]], Awaitable[None]]

POLL_SECONDS = 0.25
"""How often a stream the bus does not carry (a sub-agent's, forwarding off) reads the store."""


@router.websocket("/sockets/events/{conversation_id}")
async def events_socket(websocket: WebSocket, conversation_id: str) -> None:
    """First frame ``full_state``, then the replay, then live events: every stored event of the
    view once, in ``seq`` order. Inbound frames are messages to the conversation."""
    # Accept, then refuse with a close code: every client library shows the code.
    await websocket.accept()
    state = websocket.app.state
    try:
        await authenticate(websocket, state.settings)
        conversation = await state.runtime.get(conversation_id)
        params = StreamParams.from_query(websocket.query_params)
    except TaskwireError as exc:
        await close(websocket, close_code_for(exc), exc.detail)
        return
    except WebSocketDisconnect:
        return
    with state.subscriber_limit.claim() as admitted:
        if not admitted:
            await close(websocket, CloseCode.TOO_MANY_SUBSCRIBERS, "too many live subscribers; retry later")
            return
        code, reason = await serve_events(websocket, state, conversation, params)
    await close(websocket, code, reason)


async def authenticate(websocket: WebSocket, settings: Settings) -> None:
    """Header, query, or (when neither holds a key) a first ``auth`` frame within 10 s."""
    key = websocket.headers.get(HEADER) or websocket.query_params.get("session_api_key")
    if key is None and settings.auth_required:
        try:
            async with asyncio.timeout(AUTH_TIMEOUT):
                message = await websocket.receive()
        except TimeoutError:
            raise Unauthorized(f"no auth frame within {AUTH_TIMEOUT:g} s") from None
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        try:
            frame = parse_inbound(_data(message), max_bytes=settings.max_body_bytes)
        except TaskwireError:
            frame = None
        key = frame.session_api_key if isinstance(frame, InboundAuth) else None
    if not api_key_valid(settings, key):
        raise Unauthorized(f"missing or invalid session API key ({HEADER} header, query or auth frame)")


async def serve_events(
    websocket: WebSocket, state: State, conversation: ConversationRecord, params: StreamParams
) -> tuple[int, str]:
    """Stream until the client leaves or the stream closes; returns the close code and reason."""
    settings: Settings = state.settings
    store: Store = state.store
    root_id = conversation.root_id
    scope = None if conversation.is_root else conversation.id
    fed = EventStream.fed_by_bus(forwarding=settings.forward_subagent_events, scope_subagent_id=scope)
    listening = state.bus.subscribe(root_id, maxsize=settings.ws_queue_size) if fed else contextlib.nullcontext()
    async with listening as subscription:
        # Subscribed before anything is read: what is published from now on is queued, what
        # came before is in the store, and the stream drops the overlap.
        stream = await open_stream(store, settings, conversation, params)
        full_state = await state.runtime.full_state(conversation.id)
        lock = asyncio.Lock()

        async def send(frames: list[str]) -> None:
            async with lock:  # outbound events and inbound error frames share the socket
                for frame in frames:
                    await websocket.send_text(frame)

        await send([ConversationStateUpdateEvent(key="full_state", value=full_state).to_json()])
        outbound = asyncio.create_task(pump(stream, subscription, store, send))
        inbound = asyncio.create_task(read_inbound(websocket, state, conversation.id, send))
        done, pending = await asyncio.wait({outbound, inbound}, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    for task in done:
        error = task.exception()
        if isinstance(error, (WebSocketDisconnect, OSError)):
            return 1000, ""  # the client left
        if error is not None:
            log.error("event socket for %s failed", conversation.id, exc_info=error)
            return WS_1011_INTERNAL_ERROR, "internal error; see the server log"
    return outbound.result() if outbound in done else (1000, "")


async def open_stream(store: Store, settings: Settings, conversation: ConversationRecord, params: StreamParams) -> EventStream:
    """The ``EventStream`` of one subscriber of ``conversation``, once its bus subscription (if
    any) is entered. The tree is read after the log's end, so it holds every sub-agent started
    up to that end."""
    root_id = conversation.root_id
    log_end = await store.last_seq(root_id)
    tree = [SubagentNode.from_conversation(r) for r in await store.tree(root_id) if not r.is_root]
    return EventStream(
        root_id,
        after_seq=params.start_after(log_end),
        snapshot_seq=log_end,
        subagents=params.subagents,
        parent_tool_use_id=params.parent_tool_use_id,
        scope_subagent_id=None if conversation.is_root else conversation.id,
        schema=params.event_schema,  # type: ignore[arg-type]
        forwarding=settings.forward_subagent_events,
        tree=tree,
        max_pending=settings.ws_queue_size,
    )


async def pump(stream: EventStream, subscription: Subscription | None, store: Store, send: Send) -> tuple[int, str]:
    """Drive ``stream``: answer its store reads, feed it the bus (or, with no subscription,
    poll the store), send its frames."""
    ahead: tuple[EventQuery, asyncio.Task[EventPage]] | None = None
    try:
        while (code := stream.close_code()) is None:
            query = stream.store_query()
            if query is not None:
                if ahead is None or ahead[0] is not query:
                    if ahead is not None:
                        ahead[1].cancel()
                    ahead = (query, asyncio.ensure_future(read_page(store, query)))
                page = await ahead[1]
                stream.receive_stored(page.items, exhausted=page.next_page_id is None)
                # Read the next page while this one is being sent.
                following = stream.store_query()
                ahead = (following, asyncio.ensure_future(read_page(store, following))) if following else None
            elif subscription is None:
                await asyncio.sleep(POLL_SECONDS)
                stream.poll()
                continue
            else:
                try:
                    stream.receive_live(await subscription.get())
                except Overflow:
                    stream.receive_overflow()
            try:  # take what else is queued, so the bus queue only fills while sending stalls
                while subscription is not None and (record := subscription.get_nowait()) is not None:
                    stream.receive_live(record)
            except Overflow:
                stream.receive_overflow()
            await send(stream.frames_to_send())
        return code, stream.close_reason
    finally:
        if ahead is not None:
            ahead[1].cancel()


async def read_page(store: Store, query: EventQuery) -> EventPage:
    return await store.search(query, limit=MAX_PAGE)


async def read_inbound(websocket: WebSocket, state: State, conversation_id: str, send: Send) -> None:
    """Turn inbound frames into messages to the conversation; answer bad ones with an error
    frame and keep the socket open. Returns when the client leaves."""
    max_bytes = state.settings.max_body_bytes
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
        try:
            frame = parse_inbound(_data(message), max_bytes=max_bytes)
            if isinstance(frame, InboundMessage):
                await state.runtime.send_message(conversation_id, frame.content, run=frame.run)
        except TaskwireError as exc:
            await send([error_frame(exc)])


async def close(websocket: WebSocket, code: int, reason: str) -> None:
    """Close with ``code``; the reason is cut to the protocol's 123 bytes. A client already
    gone is no error."""
    cut = reason.encode()[:123].decode(errors="ignore")
    try:
        await websocket.close(code, cut)
    except (RuntimeError, WebSocketDisconnect, OSError):
        pass


def _data(message: Any) -> str | bytes:
    text = message.get("text")
    return text if text is not None else message.get("bytes") or b""
