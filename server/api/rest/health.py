"""Health and server info: the only routes without auth."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel
from fastapi.responses import JSONResponse

from ... import __version__
from ..auth import api_key_valid, request_key

router = APIRouter(tags=["health"])


@router.get("/alive")
async def alive() -> dict[str, str]:
    """The process answers."""
    return {"status": "ok"}


@router.get("/health")
async def health() -> dict[str, str]:
    """The process answers (kept for OpenHands clients)."""
    return {"status": "ok"}


class Readiness(BaseModel):
    """What ``/ready`` answers, ready or not."""

    status: Literal["ready", "not_ready"]
    checks: dict[str, str]
    """``ok``, or why not, per part (``store``, ``bus``)."""


@router.get("/ready", responses={200: {"model": Readiness}, 503: {"model": Readiness, "description": "Not ready"}})
async def ready(request: Request) -> JSONResponse:
    """Ready to serve: the store reads and takes a write, and the bus can deliver. 503
    otherwise, with the reason (``checks``)."""
    state = request.app.state
    checks = {"store": "ok", "bus": "ok" if getattr(state, "bus", None) and state.bus.healthy else "down"}
    try:
        reason = await state.store.ready()
    except Exception as exc:  # any store failure means not ready
        reason = repr(exc)
    if reason is not None:
        checks["store"] = f"down: {reason}"
    ok = all(v == "ok" for v in checks.values())
    return JSONResponse({"status": "ready" if ok else "not_ready", "checks": checks}, status_code=200 if ok else 503)


@router.get("/server_info")
async def server_info(request: Request) -> dict:
    """Version and the public settings that shape what clients see. Public, so it shows
    nothing that could hold a secret: webhooks by host only, unless the request carries a
    valid key (then their full URLs too)."""
    settings = request.app.state.settings
    detailed = settings.auth_required and api_key_valid(settings, request_key(request))
    webhooks = [w.status() for w in getattr(request.app.state, "webhooks", [])]
    if not detailed:
        webhooks = [{k: v for k, v in w.items() if k != "url"} for w in webhooks]
    return {
        "name": "taskwire",
        "version": __version__,
        "forward_subagent_events": settings.forward_subagent_events,
        "auth_required": settings.auth_required,
        "bus": "redis" if settings.redis_url else "memory",
        "store": settings.resolved_database_url().split(":", 1)[0],
        "llm_api": settings.llm_api,
        "event_schema": 2,
        "webhooks": webhooks,
        "loaded_conversations": request.app.state.runtime.loaded_count,
    }
