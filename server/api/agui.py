"""AG-UI over Server-Sent Events: ``POST /agui`` runs, ``GET /agui/{thread_id}`` follows.

A thread is a root conversation: ``threadId`` is its id. The events are a projection of the
stored log (``server/agui/``), so a follower and a runner of the same thread see the same
events, and a client that reconnects with ``Last-Event-ID`` misses nothing. docs/agui.md
documents both routes and the mapping. A run whose tree waits for a person ends with the
interrupt outcome; the next ``POST /agui`` answers with ``resume`` (``answered_by: "agui"``).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request

from ..agui import RunAgentInput, parse_last_event_id
from ..agui.input import run_input_schema
from .auth import require_api_key, require_api_key_or_query
from .openapi import errors, event_stream
from .sse import AguiStream, EventStreamResponse
from ..errors import BadRequest, Conflict, ConversationNotFound, NotFound
from ..runtime import Runtime
from ..specs import NativeAgentSpec
from ..store import ConversationRecord
from ..store.base import MAX_SEQ

router = APIRouter(tags=["agui"])


@router.post(
    "/agui",
    dependencies=[Depends(require_api_key)],
    response_class=EventStreamResponse,
    responses=errors(400, 401, 404, 409, 413, 422, 429, 503),
    # The body is read raw (and checked by RunAgentInput.parse): say what it takes.
    openapi_extra={
        "requestBody": {"required": True, "content": {"application/json": {"schema": run_input_schema()}}},
        **event_stream(),
    },
)
async def run_agent(request: Request) -> AguiStream:
    """Take a ``RunAgentInput``: send its newest user message to the thread (creating the
    conversation if the thread is new) and stream the run it starts, ``RUN_STARTED`` to
    ``RUN_FINISHED`` / ``RUN_ERROR``. Closing the stream does not stop the run. With
    ``resume``, answer the thread's waiting permission requests instead (no message is sent)
    and stream the run that goes on; without it, a thread that waits is a 409."""
    run_input = RunAgentInput.parse(await request.body())
    runtime: Runtime = request.app.state.runtime
    answers: list[tuple[str, dict[str, Any]]] = []
    message: str | None = None
    if run_input.resume:
        conversation, waiting = await resumed_thread(runtime, run_input)
        answers = [(request_id, answer) for request_id, answer in run_input.resume_answers() if request_id in waiting]
    else:
        message = run_input.newest_user_text()
        conversation = await thread_of(runtime, run_input)
        await refuse_while_waiting(runtime, conversation)
    return AguiStream(
        request.app.state,
        conversation,
        after_seq=None,
        run=(run_input.run_id, run_input.parent_run_id),
        message=message,
        answers=answers,
    )


@router.get(
    "/agui/{thread_id}",
    dependencies=[Depends(require_api_key_or_query)],
    response_class=EventStreamResponse,
    responses=errors(400, 401, 404, 429, 503),
    openapi_extra=event_stream(),
)
async def follow_thread(
    thread_id: str,
    request: Request,
    after_seq: int | None = Query(default=None, ge=0, le=MAX_SEQ, description="Resume after this seq (Last-Event-ID wins)."),
    until: Literal["idle"] | None = Query(default=None, description="idle: end once no run is going."),
    run_id: str | None = Query(default=None, min_length=1, max_length=200, description="Name the first run."),
) -> AguiStream:
    """The thread's events after ``Last-Event-ID`` (or ``after_seq``; default: from the
    start) as AG-UI runs, then the live tail, until the client leaves (or, with
    ``until=idle``, until no run is going)."""
    runtime: Runtime = request.app.state.runtime
    conversation = await runtime.get(thread_id)
    if not conversation.is_root:
        raise BadRequest(
            f"{thread_id!r} is a sub-agent; follow its thread {conversation.root_id!r}", code="subagent_conversation"
        )
    resume = parse_last_event_id(request.headers.get("last-event-id"))
    return AguiStream(
        request.app.state,
        conversation,
        after_seq=resume if resume is not None else (after_seq or 0),
        first_run_id=run_id,
        until_idle=until == "idle",
    )


async def thread_of(runtime: Runtime, run_input: RunAgentInput) -> ConversationRecord:
    """The root conversation ``threadId`` names, created (idle) if there is none yet, with
    the agent of ``forwardedProps.taskwire.agent`` or the server's default."""
    agent = run_input.agent()  # checked even for a known thread: a mistake is a mistake
    try:
        record = await runtime.get(run_input.thread_id)
    except ConversationNotFound:
        spec = agent if agent is not None else NativeAgentSpec().model_dump(exclude_none=True)
        try:
            return await runtime.create(spec, conversation_id=run_input.thread_id, run=False)
        except Conflict as exc:
            if exc.code != "conversation_exists":
                raise
            record = await runtime.get(run_input.thread_id)  # another request made it first
    if not record.is_root:
        raise BadRequest(
            f"threadId {run_input.thread_id!r} is a sub-agent; run its thread {record.root_id!r}",
            code="subagent_conversation",
        )
    return record


async def resumed_thread(runtime: Runtime, run_input: RunAgentInput) -> tuple[ConversationRecord, set[str]]:
    """The thread a ``resume`` continues, and the request ids of its entries that still wait,
    once each entry names a request of its tree: 404 ``unknown_interrupt`` for one it never
    raised, 409 ``interrupt_resolved`` for an answer to one already answered or ended (timed
    out, cancelled). Abandoning (``cancelled``) one that ended is no error: it is how a
    consumer moves past an interrupt that expired."""
    run_input.resume_answers()  # a malformed entry is a 422 before anything is read
    record = await runtime.get(run_input.thread_id)
    if not record.is_root:
        raise BadRequest(f"threadId {run_input.thread_id!r} is a sub-agent; run its thread {record.root_id!r}",
                         code="subagent_conversation")
    requests = {entry["request_id"]: entry for entry in await runtime.permissions(record.id, "all")}
    waiting = set()
    for resumed in run_input.resume or []:
        entry = requests.get(resumed.interrupt_id)
        if entry is None:
            raise NotFound(f"resume names interrupt {resumed.interrupt_id!r}, which this thread never raised",
                           code="unknown_interrupt")
        if entry["status"] == "pending":
            waiting.add(resumed.interrupt_id)
        elif resumed.status != "cancelled":
            raise Conflict(f"interrupt {resumed.interrupt_id!r} was already answered ({entry['status']}); nothing "
                           "waits on it (abandon it with status cancelled to move on)", code="interrupt_resolved")
    return record, waiting


async def refuse_while_waiting(runtime: Runtime, conversation: ConversationRecord) -> None:
    """A new message while the thread waits for a person would leave its interrupts unanswered
    (AG-UI's coverage rule): 409 ``interrupts_pending``, naming them."""
    waiting = await runtime.permissions(conversation.id)
    if waiting:
        ids = ", ".join(entry["request_id"] for entry in waiting)
        raise Conflict(f"the thread waits on {len(waiting)} interrupt(s): {ids}; answer them with resume first",
                       code="interrupts_pending")
