"""``mock-llm``: the scripted model served over HTTP in the OpenAI and Anthropic dialects.

Routes:

- ``POST /v1/messages`` (Anthropic Messages; ``?beta=true`` accepted), streaming or not
- ``POST /v1/chat/completions`` (OpenAI chat completions), streaming or not
- ``GET /script/status``: unused steps, failures and what was served (for tests)

A request the script has no turn for (no lane matches, or its lane has no turn left) gets the
plain unscripted reply, or, from a ``strict`` script, a 400 naming the lane and turn, so real
clients give up instead of retrying with back-off. An ``error``
turn gets its ``status`` (500 by default) and its ``Retry-After``; a ``fault`` turn breaks its
answer on the way (``reset``, ``stall``, ``cut``); ``random_faults`` answer a share of all
requests with an error status. Every request body can be logged, byte for byte as received, to
a JSONL file: ``{"path", "query", "lane", "turn", "at", "status", "fault", "body"}`` a line.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..errors import BadRequest, LLMError
from . import mock_anthropic, mock_openai
from .script import Script, ScriptRequest, ScriptStep

_SSE_HEADERS = {"cache-control": "no-cache"}
_SERVER_SEND = "taskwire.mock.server_send"
"""Where the scope keeps the server's own ``send`` (its connection is what a ``reset`` drops)."""
_STALL_LIMIT = 600.0
"""The longest a ``stall`` fault keeps a connection silent when its client never hangs up."""


def _dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


class _RequestLog:
    """Appends one JSON line per request; a lock keeps lines whole and in arrival order."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = asyncio.Lock()

    async def write(
        self, request: Request, body: bytes, step: ScriptStep | None, status: int, fault: str | None = None
    ) -> None:
        if self.path is None:
            return
        entry = {
            "path": request.url.path,
            "query": request.url.query,
            "lane": step.lane if step else None,
            "turn": step.turn if step else None,
            "at": time.time(),  # when it arrived: what a test of the client's waits reads
            "status": status,
            "fault": fault,
            # surrogateescape keeps even non-UTF-8 bodies exact once encoded back.
            "body": body.decode("utf-8", errors="surrogateescape"),
        }
        line = json.dumps(entry) + "\n"
        async with self._lock:
            await asyncio.to_thread(_append, self.path, line)


def _append(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as log:
        log.write(line)


@dataclass(frozen=True)
class _Dialect:
    """How one API reads requests and writes answers and errors."""

    parse: Callable[[Any], ScriptRequest]
    id_prefix: str
    answer: Callable[[ScriptStep, str], dict[str, Any]]
    stream: Callable[[ScriptStep, str, dict[str, Any]], list[str]]
    error: Callable[[int, str], dict[str, Any]]


def _anthropic_stream(step: ScriptStep, model: str, body: dict[str, Any]) -> list[str]:
    return [
        f"event: {name}\ndata: {_dumps(data)}\n\n"
        for name, data in mock_anthropic.anthropic_events(step, model)
    ]


def _openai_stream(step: ScriptStep, model: str, body: dict[str, Any]) -> list[str]:
    options = body.get("stream_options") or {}
    include_usage = bool(options.get("include_usage")) if isinstance(options, dict) else False
    chunks = mock_openai.openai_chunks(step, model, include_usage=include_usage)
    return [f"data: {_dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]


ANTHROPIC = _Dialect(
    parse=mock_anthropic.anthropic_request,
    id_prefix=mock_anthropic.TOOL_ID_PREFIX,
    answer=mock_anthropic.anthropic_message,
    stream=_anthropic_stream,
    error=mock_anthropic.anthropic_error,
)
OPENAI = _Dialect(
    parse=mock_openai.openai_request,
    id_prefix=mock_openai.TOOL_ID_PREFIX,
    answer=mock_openai.openai_completion,
    stream=_openai_stream,
    error=mock_openai.openai_error,
)


def create_mock_app(
    script: Script | str | Path | Mapping[str, Any], *, log_path: str | Path | None = None
) -> Starlette:
    """An ASGI app serving ``script`` in both dialects. The ``Script`` is on
    ``app.state.script`` (its ``unused_steps()`` answer in-process tests)."""
    loaded = Script.load(script)
    log = _RequestLog(Path(log_path) if log_path is not None else None)

    def endpoint(dialect: _Dialect) -> Callable[[Request], Any]:
        async def answer(request: Request) -> Response:
            return await _answer(request, dialect, loaded, log)

        return answer

    async def status(request: Request) -> Response:
        return JSONResponse(loaded.status())

    async def unknown(request: Request) -> Response:
        await log.write(request, await request.body(), None, 404)
        message = f"mock-llm has no route {request.method} {request.url.path}"
        return JSONResponse(ANTHROPIC.error(404, message), status_code=404)

    app = _MockApp(
        routes=[
            Route("/v1/messages", endpoint(ANTHROPIC), methods=["POST"]),
            Route("/v1/chat/completions", endpoint(OPENAI), methods=["POST"]),
            Route("/script/status", status, methods=["GET"]),
            Route("/{path:path}", unknown, methods=["GET", "POST", "PUT", "DELETE", "HEAD"]),
        ]
    )
    app.state.script = loaded
    return app


async def _answer(request: Request, dialect: _Dialect, script: Script, log: _RequestLog) -> Response:
    raw = await request.body()
    step: ScriptStep | None = None
    try:
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise BadRequest(f"request body is not valid JSON: {exc}") from exc
        view = dialect.parse(body)
        chaos = script.random_fault()
        if chaos is None:
            step = script.select(view, id_prefix=dialect.id_prefix)
    except (BadRequest, LLMError) as exc:
        await log.write(request, raw, None, 400)
        # A script that cannot answer is the caller's scenario going off script: a 400, as for
        # a malformed request, so real clients give up instead of retrying with back-off.
        return JSONResponse(dialect.error(400, exc.detail), status_code=400)
    if chaos is not None:  # drawn before a turn is chosen: the turn is served on the next try
        await log.write(request, raw, None, chaos.status)
        message = f"random fault (a share of {chaos.share:g} of requests)"
        return _error(dialect, chaos.status, message, chaos.retry_after)
    assert step is not None
    failing = step.error is not None
    await log.write(request, raw, step, step.status if failing else 200, step.fault)
    if step.delay and not await _wait_unless_disconnected(request, step.delay):
        return Response(status_code=499)  # nobody is listening any more
    if step.error is not None:
        message = f"scripted failure (lane {step.lane}, turn {step.turn}): {step.error}"
        return _error(dialect, step.status, message, step.retry_after)
    if step.fault == "reset" and _drop_connection(request):
        await _wait_unless_disconnected(request, _STALL_LIMIT)
        return Response(status_code=499)  # the connection is gone; nothing is sent
    model = body["model"]
    if not body.get("stream"):
        return JSONResponse(dialect.answer(step, model))
    frames = dialect.stream(step, model, body)
    if step.fault in ("stall", "cut", "reset"):  # a reset without a connection to drop: cut
        frames = frames[: max(1, len(frames) // 2)]
    stall = _STALL_LIMIT if step.fault == "stall" else 0.0
    return StreamingResponse(_frames(frames, stall), media_type="text/event-stream", headers=_SSE_HEADERS)


def _error(dialect: _Dialect, status: int, message: str, retry_after: float | None) -> Response:
    headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else None
    return JSONResponse(dialect.error(status, message), status_code=status, headers=headers)


class _MockApp(Starlette):
    """Starlette that keeps the server's own ``send`` in each request's scope."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            scope[_SERVER_SEND] = send
        await super().__call__(scope, receive, send)


def _drop_connection(request: Request) -> bool:
    """Reset the request's connection (an RST, as an overloaded balancer sends); ``False``
    when the server does not show its connection (not uvicorn)."""
    cycle = getattr(request.scope.get(_SERVER_SEND), "__self__", None)
    transport = getattr(cycle, "transport", None)
    if not isinstance(transport, asyncio.Transport):
        return False
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()
    return True


async def _wait_unless_disconnected(request: Request, seconds: float) -> bool:
    """Sleep ``seconds``; False as soon as the client hangs up (a slow turn must not outlive
    the client that gave up on it, or the server's shutdown waits for it)."""

    async def hang_up() -> None:
        # With the body read, the next ASGI message is the client's disconnect.
        while (await request.receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(hang_up())
    try:
        done, _ = await asyncio.wait({watcher}, timeout=seconds)
    finally:
        watcher.cancel()
    return not done


async def _frames(frames: list[str], stall: float = 0.0) -> AsyncIterator[bytes]:
    for frame in frames:
        yield frame.encode("utf-8")
    if stall:
        await asyncio.sleep(stall)  # Starlette ends this when the client hangs up


async def serve_mock_llm(
    script: Script | str | Path | Mapping[str, Any],
    host: str = "127.0.0.1",
    port: int = 8765,
    log_path: str | Path | None = None,
) -> None:
    """Serve ``script`` under uvicorn until cancelled (``taskwire mock-llm``)."""
    app = create_mock_app(script, log_path=log_path)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
    await server.serve()
