"""Permission requests: what a conversation tree waits for, and answering one."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query, Request

from ..openapi import errors
from ...permissions.answers import PermissionAnswer
from ...runtime import Runtime

router = APIRouter(prefix="/api/conversations", tags=["permissions"])


@router.get("/{conversation_id}/permissions", responses=errors(404))
async def list_permissions(
    conversation_id: str,
    request: Request,
    status: Literal["pending", "all"] = Query(default="pending", description="Waiting ones only, or every one."),
) -> list[dict[str, Any]]:
    """Permission requests of the conversation and every sub-agent below it, oldest first:
    each request's fields (``request_id``, ``tool_call_id``, ``tool_name``, ``title``,
    ``arguments``, ``options``, ``reason``, and the stamps of the sub-agent that asks), its
    ``status`` (``pending`` or the outcome) and, once resolved, its ``resolution``."""
    runtime: Runtime = request.app.state.runtime
    return await runtime.permissions(conversation_id, status)


@router.post("/{conversation_id}/permissions/{request_id}", responses=errors(404, 409))
async def answer_permission(
    conversation_id: str,
    request_id: str,
    body: PermissionAnswer,
    request: Request,
    via: Literal["acp", "agui"] | None = Query(
        default=None, description="A relay's surface the person answered on (taskwire acp --url): answered_by."
    ),
) -> dict[str, Any]:
    """Answer a waiting request: ``{"option_id": ...}`` or ``{"decision": "allow"|"reject",
    "always": false}``, with an optional ``reason``. Returns the stored
    ``PermissionResolvedEvent``. The first answer wins: 409 once the request has one (or ended:
    cancelled, timed out), 404 for an unknown request, 422 for an option it did not offer.
    ``via`` names the surface a relaying client took the answer from (``answered_by``;
    default ``rest``)."""
    runtime: Runtime = request.app.state.runtime
    return await runtime.answer_permission(
        conversation_id, request_id, body.model_dump(exclude_none=True), via or "rest"
    )
