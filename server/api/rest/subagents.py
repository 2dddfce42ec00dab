"""Sub-agents: the tree of a conversation, cancelling one, and the types available."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request

from ..openapi import errors
from ..schemas import SteerMessage
from ...runtime import Runtime
from ...runtime.workspaces import confined_path

router = APIRouter(tags=["sub-agents"])


@router.get("/api/conversations/{conversation_id}/subagents", responses=errors(404))
async def list_subagents(conversation_id: str, request: Request) -> list[dict[str, Any]]:
    """Every sub-agent below the conversation, flat, parents before children."""
    return await request.app.state.runtime.subagents(conversation_id)


@router.post("/api/conversations/{conversation_id}/subagents/{subagent_id}/cancel", status_code=202, responses=errors(400, 404, 409))
async def cancel_subagent(conversation_id: str, subagent_id: str, request: Request) -> dict[str, Any]:
    """Cancel one running sub-agent (and those below it); its siblings and its parent go on, and
    the parent's observation says it was cancelled."""
    runtime: Runtime = request.app.state.runtime
    await runtime.cancel_subagent(conversation_id, subagent_id)
    return {"cancelled": subagent_id}


@router.post("/api/conversations/{conversation_id}/subagents/{subagent_id}/messages", status_code=202,
             responses=errors(404, 409, 422))
async def steer_subagent(conversation_id: str, subagent_id: str, body: SteerMessage, request: Request) -> dict[str, Any]:
    """Send a person's message to one running sub-agent: it reads it before its next model call.
    Stored in the sub-agent's own stream as a user message (stamped; live on the root's socket
    when forwarding is on), never in the parent's history. 409 ``subagent_not_running`` for an
    ended sub-agent, 409 ``subagent_not_steerable`` (with why) for one whose backend cannot take
    it, 404 for a sub-agent not in this tree. Returns the stored ``MessageEvent``."""
    runtime: Runtime = request.app.state.runtime
    return await runtime.steer_subagent(conversation_id, subagent_id, body.content)


@router.get("/api/sub-agents", responses=errors(400))
async def list_subagent_types(
    request: Request, workspace: str | None = Query(default=None, description="Include this project's types.")
) -> list[dict[str, Any]]:
    """Sub-agent types: built-in, plugin and (with ``workspace``, a folder under a workspace
    root) project ones, with their source."""
    folder = confined_path(request.app.state.settings, workspace) if workspace else None
    types = request.app.state.hooks.subagent_types(folder)
    return [t.public() for t in sorted(types.values(), key=lambda t: t.name)]
