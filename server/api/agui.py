"""AG-UI over Server-Sent Events: ``POST /agui`` runs, ``GET /agui/{thread_id}`` follows.

A thread is a root conversation: ``threadId`` is its id. The events are a projection of the
stored log (``server/agui/``), so a follower and a runner of the same thread see the same
events, and a client that reconnects with ``Last-Event-ID`` misses nothing. docs/agui.md
documents both routes and the mapping.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Query, Request

from server.agui import RunAgentInput, parse_last_event_id
from server.api.auth import require_api_key, require_api_key_or_query
from server.api.sse import AguiStream, EventStreamResponse
from server.errors import BadRequest, Conflict, ConversationNotFound
from server.runtime import Runtime
from server.specs import NativeAgentSpec
from server.store import ConversationRecord

router = APIRouter(tags=["agui"])


@router.post("/agui", dependencies=[Depends(require_api_key)], response_class=EventStreamResponse)
async def run_agent(request: Request) -> AguiStream:
    """Take a ``RunAgentInput``: send its newest user message to the thread (creating the
    conversation if the thread is new) and stream the run it starts, ``RUN_STARTED`` to
    ``RUN_FINISHED`` / ``RUN_ERROR``. Closing the stream does not stop the run."""
    run_input = RunAgentInput.parse(await request.body())
    message = run_input.newest_user_text()
    conversation = await thread_of(request.app.state.runtime, run_input)
    return AguiStream(
        request.app.state,
        conversation,
        after_seq=None,
        run=(run_input.run_id, run_input.parent_run_id),
        message=message,
    )


@router.get("/agui/{thread_id}", dependencies=[Depends(require_api_key_or_query)], response_class=EventStreamResponse)
async def follow_thread(
    thread_id: str,
    request: Request,
    after_seq: int | None = Query(default=None, ge=0, description="Resume after this seq (Last-Event-ID wins)."),
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
