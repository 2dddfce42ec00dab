"""The bare ceiling of ``bench/live.py``: the same routes a tree's client uses, answered by a
bare Starlette app under uvicorn with nothing behind them.

``POST /api/conversations`` reads and parses the JSON body and answers 201 with a new id; the
socket ``/sockets/events/{id}`` sends the three frames a watcher waits for (a first frame, a
sub-agent event, the root's ``finished``) and closes. What ``bench/live.py`` measures against
it is what the machine, uvicorn and the clients cost before taskwire does anything.

    .venv/bin/python -m uvicorn bench.bare_api:app --port 8765
"""

from __future__ import annotations

import json
import uuid

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

FRAMES = [
    {"kind": "full_state", "status": "running"},
    {"kind": "ActionEvent", "subagent_id": "bare", "parent_tool_use_id": "bare"},
    {"kind": "ConversationStateUpdateEvent", "key": "status", "value": "finished"},
]


async def create(request: Request) -> JSONResponse:
    await request.json()
    return JSONResponse({"id": uuid.uuid4().hex, "status": "running"}, status_code=201)


async def events(socket: WebSocket) -> None:
    await socket.accept()
    for frame in FRAMES:
        await socket.send_text(json.dumps(frame))
    await socket.close()


app = Starlette(routes=[Route("/api/conversations", create, methods=["POST"]), WebSocketRoute("/sockets/events/{id}", events)])
