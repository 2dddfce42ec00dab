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
from pydantic import ValidationError
from starlette.datastructures import State
from starlette.status import WS_1011_INTERNAL_ERROR

from .auth import HEADER, api_key_valid
from .errors import close_code_for, error_response
from .serving import lift_frame_limit
from .socket_writer import SocketWriter, Stalled
from ..bus import Overflow, Subscription
from ..errors import InvalidPermissionAnswer, TaskwireError, TooManyRequests, Unauthorized
from ..events import ConversationStateUpdateEvent
from ..settings import Settings
from ..store import ConversationRecord, EventPage, EventQuery, Store
from ..store.base import MAX_PAGE
from ..stream import CloseCode, EventStream, SubagentNode
from ..permissions.answers import PermissionAnswer
from ..stream.inbound import (
    InboundAuth,
    InboundMessage,
    InboundPermission,
    error_frame,
    parse_inbound,
    permission_answer_frame,
)
from ..stream.limits import WaitingRoom
from ..stream.params import StreamParams

log = logging.getLogger(__name__)
router = APIRouter(tags=["sockets"])

Send = Callable[[list[str]], Awaitable[None]]

CLIENT_LEFT = (WebSocketDisconnect, OSError)
"""What a send or receive raises when the client has gone (uvicorn's ``ClientDisconnected`` is
an ``OSError``)."""

POLL_SECONDS = 0.25
"""How often a stream the bus does not carry (a sub-agent's, forwarding off) reads the store."""


@router.websocket("/sockets/events/{conversation_id}")
async def events_socket(websocket: WebSocket, conversation_id: str) -> None:
    """First frame ``full_state``, then the replay, then live events: every stored event of the
    view once, in ``seq`` order. Inbound frames are messages to the conversation."""
    state = websocket.app.state
    try:
        # Accept, then refuse with a close code: every client library shows the code.
        await websocket.accept()
        code, reason = await serve_socket(websocket, state, conversation_id)
    except CLIENT_LEFT:
        # A client may leave at any moment; that is no error of ours.
        log.debug("client of conversation %s left", conversation_id)
        return
    state.subscriber_limit.record_close(code)
    await close(websocket, code, reason, timeout=state.settings.ws_send_timeout)


fallback = APIRouter()
"""Included last: it matches every WebSocket path no other route took."""


@fallback.websocket("/{path:path}")
async def unknown_socket(websocket: WebSocket, path: str) -> None:
    """Any other WebSocket path: HTTP 404 at the handshake (where the server can answer one),
    never the 403 that reads as an auth problem."""
    detail = f"no WebSocket endpoint at /{path}; connect to /sockets/events/{{conversation_id}}"
    try:
        if "websocket.http.response" in websocket.scope.get("extensions", {}):
            await websocket.send_denial_response(error_response(404, detail, "not_found"))
            return
        await websocket.accept()
    except CLIENT_LEFT:
        return
    await close(websocket, CloseCode.UNKNOWN_CONVERSATION, detail, timeout=websocket.app.state.settings.ws_send_timeout)


async def serve_socket(websocket: WebSocket, state: State, conversation_id: str) -> tuple[int, str]:
    """Authenticate, find the conversation, admit the subscriber and stream; returns the close
    code and reason. Raises one of ``CLIENT_LEFT`` when the client goes."""
    try:
        await authenticate(websocket, state)
        conversation = await state.runtime.get(conversation_id)
        params = StreamParams.from_query(websocket.query_params)
    except TaskwireError as exc:
        return close_code_for(exc), exc.detail
    with state.subscriber_limit.claim() as admitted:
        if not admitted:
            return CloseCode.TOO_MANY_SUBSCRIBERS, "too many live subscribers; retry later"
        return await serve_events(websocket, state, conversation, params)


async def authenticate(websocket: WebSocket, state: State) -> None:
    """Header, query, or (when neither holds a key) a first ``auth`` frame within
    ``OH_WS_AUTH_TIMEOUT``. Until the key is checked, client frames are small
    (``serving.PRE_AUTH_MAX_MESSAGE``); afterwards they may be up to ``OH_MAX_BODY_BYTES``."""
    settings: Settings = state.settings
    key = websocket.headers.get(HEADER) or websocket.query_params.get("session_api_key")
    if key is None and settings.auth_required:
        key = await receive_auth_frame(websocket, state)
    if not api_key_valid(settings, key):
        raise Unauthorized(f"missing or invalid session API key ({HEADER} header, query or auth frame)")
    lift_frame_limit(websocket.scope)


class _Waiter:
    """A socket in the waiting room: its auth deadline, which a newcomer may cut short."""

    __slots__ = ("deadline", "turned_away")

    def __init__(self, deadline: asyncio.Timeout) -> None:
        self.deadline = deadline
        self.turned_away = False

    def turn_away(self) -> None:
        self.turned_away = True
        self.deadline.reschedule(asyncio.get_running_loop().time())


async def receive_auth_frame(websocket: WebSocket, state: State) -> str | None:
    """The key of the first frame, if it is an ``auth`` frame (anything else: ``None``)."""
    settings: Settings = state.settings
    room: WaitingRoom[_Waiter] = state.waiting_room
    waiter = None
    try:
        async with asyncio.timeout(settings.ws_auth_timeout) as deadline:
            waiter = _Waiter(deadline)
            displaced = room.enter(waiter)
            if displaced is waiter:
                raise Unauthorized(f"this server takes keys only in the {HEADER} header or the session_api_key query")
            if displaced is not None:
                displaced.turn_away()
            message = await websocket.receive()
    except TimeoutError:
        if waiter is not None and waiter.turned_away:
            raise TooManyRequests("too many sockets waiting to authenticate; retry, and send the auth frame at once") from None
        raise Unauthorized(f"no auth frame within {settings.ws_auth_timeout:g} s") from None
    finally:
        if waiter is not None:
            room.leave(waiter)
    if message["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(message.get("code", 1000))
    try:
        frame = parse_inbound(_data(message), max_bytes=settings.max_body_bytes)
    except TaskwireError:
        return None
    return frame.session_api_key if isinstance(frame, InboundAuth) else None


async def serve_events(
    websocket: WebSocket, state: State, conversation: ConversationRecord, params: StreamParams
) -> tuple[int, str]:
    """Stream until the client leaves or the stream closes; returns the close code and reason.
    Raises one of ``CLIENT_LEFT`` when the client goes."""
    settings: Settings = state.settings
    store: Store = state.store
    root_id = conversation.root_id
    scope = None if conversation.is_root else conversation.id
    fed = EventStream.fed_by_bus(forwarding=settings.forward_subagent_events, scope_subagent_id=scope)
    listening = state.bus.subscribe(root_id, maxsize=settings.ws_queue_size) if fed else contextlib.nullcontext()
    async with listening as subscription, SocketWriter(websocket, settings.ws_send_timeout) as writer:
        # Subscribed before anything is read: what is published from now on is queued, what
        # came before is in the store, and the stream drops the overlap.
        stream = await open_stream(store, settings, conversation, params)
        full_state = await state.runtime.full_state(conversation.id)
        try:
            await writer.send_reply(ConversationStateUpdateEvent(key="full_state", value=full_state).to_json())
        except Stalled:
            stream.receive_stall(0)
            return CloseCode.TOO_SLOW, stream.close_reason
        outbound = asyncio.create_task(pump(stream, subscription, store, writer.send_batch))
        inbound = asyncio.create_task(read_inbound(websocket, state, conversation.id, writer))
        try:
            done, _ = await asyncio.wait({outbound, inbound}, return_when=asyncio.FIRST_COMPLETED)
        finally:  # also when this task is cancelled (shutdown): neither outlives the socket
            for task in (outbound, inbound):
                task.cancel()
            await asyncio.gather(outbound, inbound, return_exceptions=True)
    for task in done:
        error = task.exception()
        if isinstance(error, Stalled):  # an error frame found the client stuck
            stream.receive_stall(writer.batch_sent)
            return CloseCode.TOO_SLOW, stream.close_reason
        if isinstance(error, CLIENT_LEFT):
            raise error
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
    poll the store), send its frames. A ``send`` that raises ``Stalled`` (the client takes
    nothing) closes the stream as too slow."""
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
            try:
                await send(stream.frames_to_send())
            except Stalled as stall:
                stream.receive_stall(stall.sent)
        return code, stream.close_reason
    finally:
        if ahead is not None:
            ahead[1].cancel()


async def read_page(store: Store, query: EventQuery) -> EventPage:
    return await store.search(query, limit=MAX_PAGE)


async def read_inbound(websocket: WebSocket, state: State, conversation_id: str, writer: SocketWriter) -> None:
    """Turn inbound frames into messages to the conversation; answer bad ones with an error
    frame and keep the socket open. Raises ``WebSocketDisconnect`` when the client leaves."""
    max_bytes = state.settings.max_body_bytes
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        try:
            frame = parse_inbound(_data(message), max_bytes=max_bytes)
            if isinstance(frame, InboundMessage):
                await state.runtime.send_message(conversation_id, frame.content, run=frame.run)
            elif isinstance(frame, InboundPermission):
                await writer.send_reply(await answer_permission(state, conversation_id, frame))
        except TaskwireError as exc:
            await writer.send_reply(error_frame(exc))


async def answer_permission(state: State, conversation_id: str, frame: InboundPermission) -> str:
    """Answer a permission request as ``POST .../permissions/{request_id}`` would; the frame
    that says how it went (``status`` 200, 404, 409, 422)."""
    try:
        answer = PermissionAnswer.model_validate(frame.answer)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in exc.errors())
        return permission_answer_frame(frame.request_id, 422, error=InvalidPermissionAnswer(problems))
    try:
        event = await state.runtime.answer_permission(
            conversation_id, frame.request_id, answer.model_dump(exclude_none=True), "socket"
        )
    except TaskwireError as exc:
        return permission_answer_frame(frame.request_id, exc.status_code, error=exc)
    return permission_answer_frame(frame.request_id, 200, event=event)


async def close(websocket: WebSocket, code: int, reason: str, *, timeout: float) -> None:
    """Close with ``code``; the reason is cut to the protocol's 123 bytes. A client already
    gone is no error, nor one that takes nothing for ``timeout`` seconds (under a server whose
    close waits for the write buffer)."""
    cut = reason.encode()[:123].decode(errors="ignore")
    try:
        async with asyncio.timeout(timeout):
            await websocket.close(code, cut)
    except (RuntimeError, TimeoutError, *CLIENT_LEFT):
        pass


def _data(message: Any) -> str | bytes:
    text = message.get("text")
    return text if text is not None else message.get("bytes") or b""
