"""Conversations: create, find, run, pause, interrupt, delete, send a message."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request, Response

from ..openapi import errors
from ..schemas import ConversationInfo, ConversationPage, CreateConversation, SendMessage
from ...errors import BadRequest
from ...runtime import Runtime
from ...store import ConversationRecord

router = APIRouter(prefix="/api/conversations", tags=["conversations"])

Status = Query(default=None, pattern="^(idle|running|paused|finished|error)$")


def _runtime(request: Request) -> Runtime:
    return request.app.state.runtime


async def _info(runtime: Runtime, record: ConversationRecord) -> ConversationInfo:
    return ConversationInfo.of(record, await runtime.store.last_seq(record.root_id))


@router.post("", status_code=201, responses=errors(400))
async def create_conversation(body: CreateConversation, request: Request) -> ConversationInfo:
    """Start a conversation; with ``initial_message`` it starts working on it at once (unless
    ``run`` is false). Without a message it is created ``idle``: nothing to work on yet."""
    if body.run and body.initial_message is None:
        raise BadRequest(
            "`run: true` needs an `initial_message`: a conversation works on a message "
            "(or leave `run` out to create it idle and send one with POST .../events)",
            code="nothing_to_run",
        )
    runtime = _runtime(request)
    record = await runtime.create(
        body.agent.model_dump(exclude_none=True),
        workspace=body.workspace,
        initial_message=body.initial_message,
        run=body.run is not False,
    )
    # It was just written here: its last seq is known without a read.
    known = runtime.known_last_seq(record.root_id)
    return ConversationInfo.of(record, known) if known is not None else await _info(runtime, record)


@router.get("/search", responses=errors(400))
async def search_conversations(
    request: Request,
    status: str | None = Status,
    page_id: str | None = None,
    limit: int = Query(default=100, ge=1, le=100),
) -> ConversationPage:
    """Root conversations, newest first."""
    runtime = _runtime(request)
    page = await runtime.store.search_conversations(status=status, limit=limit, page_id=page_id)
    return ConversationPage(items=[await _info(runtime, r) for r in page.items], next_page_id=page.next_page_id)


@router.get("/count")
async def count_conversations(request: Request, status: str | None = Status) -> int:
    return await _runtime(request).store.count_conversations(status=status)


@router.get("/{conversation_id}", responses=errors(404))
async def get_conversation(conversation_id: str, request: Request) -> ConversationInfo:
    runtime = _runtime(request)
    return await _info(runtime, await runtime.get(conversation_id))


@router.delete("/{conversation_id}", status_code=204, responses=errors(400, 404))
async def delete_conversation(conversation_id: str, request: Request) -> Response:
    """Stop it and delete it with its sub-agents and every event."""
    await _runtime(request).delete(conversation_id)
    return Response(status_code=204)


@router.post("/{conversation_id}/run", responses=errors(400, 404, 409))
async def run_conversation(conversation_id: str, request: Request) -> ConversationInfo:
    """Start a run (409 if one is going)."""
    runtime = _runtime(request)
    await runtime.run(conversation_id)
    return await _info(runtime, await runtime.get(conversation_id))


@router.post("/{conversation_id}/pause", responses=errors(400, 404))
async def pause_conversation(conversation_id: str, request: Request) -> ConversationInfo:
    """Stop before the next model call; the status becomes ``paused``."""
    runtime = _runtime(request)
    await runtime.pause(conversation_id)
    return await _info(runtime, await runtime.get(conversation_id))


@router.post("/{conversation_id}/interrupt", responses=errors(400, 404))
async def interrupt_conversation(conversation_id: str, request: Request) -> ConversationInfo:
    """Stop now; running tool calls are closed as ``failed``, queued ones as ``cancelled``."""
    runtime = _runtime(request)
    await runtime.interrupt(conversation_id)
    return await _info(runtime, await runtime.get(conversation_id))


@router.post("/{conversation_id}/events", status_code=202, responses=errors(400, 404, 409))
async def send_message(conversation_id: str, body: SendMessage, request: Request) -> dict[str, bool]:
    """Send a user message; with ``run`` (default) the agent works on it."""
    await _runtime(request).send_message(conversation_id, body.content, run=body.run)
    return {"accepted": True}
