"""The viewer: a page at ``/`` that shows conversations and their sub-agents live.

The page (``server/static/``: HTML, CSS and JavaScript modules, no build step) is a client of
the public API only: REST for conversations and sub-agents, the event WebSocket for the live
view. This module serves its files, without auth (they hold no data: the page asks for a session
API key when ``/server_info`` says ``auth_required``), and includes ``GET /api/demo``.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request, Response
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from . import demo

STATIC_DIR = Path(__file__).resolve().parents[1] / "static"

# Revalidate on every load (ETag): an upgraded server never runs a stale page.
_NO_CACHE = {"Cache-Control": "no-cache"}

router = APIRouter()
router.include_router(demo.router)


@router.get("/", include_in_schema=False)
async def index() -> FileResponse:
    """The viewer page."""
    return FileResponse(STATIC_DIR / "index.html", headers=_NO_CACHE)


@router.get("/static/{path:path}", include_in_schema=False)
async def static_file(path: str, request: Request) -> Response:
    """The page's modules and styles. ``StaticFiles`` resolves the path (no escaping the folder)
    and answers conditional requests; a missing file is a 404."""
    response = await _files(request).get_response(path, request.scope)
    response.headers.update(_NO_CACHE)
    return response


def _files(request: Request) -> StaticFiles:
    # One StaticFiles per app, made on first use: no module-level instance.
    files = getattr(request.app.state, "static_files", None)
    if files is None:
        files = request.app.state.static_files = StaticFiles(directory=STATIC_DIR)
    return files
