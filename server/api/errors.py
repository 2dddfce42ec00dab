"""The one place taskwire errors become HTTP responses (``{"detail": ..., "code": ...}``) or
WebSocket close codes."""

from __future__ import annotations

import logging
import math
import re

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from ..errors import NotFound, TaskwireError, TooManyRequests, Unauthorized, Unavailable
from taskwire_client.close_codes import CloseCode

log = logging.getLogger(__name__)


def error_response(status: int, detail: str, code: str) -> JSONResponse:
    return JSONResponse({"detail": detail, "code": code}, status_code=status)


def close_code_for(error: TaskwireError) -> CloseCode:
    """The close code for an error that ends a live socket before it streams."""
    if isinstance(error, Unauthorized):
        return CloseCode.UNAUTHORIZED
    if isinstance(error, NotFound):
        return CloseCode.UNKNOWN_CONVERSATION
    if isinstance(error, TooManyRequests):
        return CloseCode.TOO_MANY_SUBSCRIBERS
    if isinstance(error, Unavailable):
        return CloseCode.TRY_AGAIN_LATER
    return CloseCode.BAD_REQUEST


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
_PARAMETER = re.compile(r"\\{[^/]+?\\}")


def allowed_methods(request: Request) -> list[str]:
    """The methods of the path a 405 was asked at, for its ``Allow`` (RFC 9110). The router
    knows only the first route whose path matched; the OpenAPI document knows them all, per
    path as a client reads it (``/count`` is not ``/{conversation_id}``)."""
    path = request.url.path
    for pattern, methods in _documented_paths(request.app):
        if pattern.fullmatch(path):
            return methods
    scope = {**request.scope, "type": "http"}  # an undocumented route (the viewer's): ask the router
    return [m for m in _METHODS if any(r.matches({**scope, "method": m})[0] == Match.FULL for r in request.app.router.routes)]


def _documented_paths(app: FastAPI) -> list[tuple[re.Pattern[str], list[str]]]:
    table = getattr(app.state, "documented_paths", None)
    if table is None:
        table = []
        for template, operations in app.openapi().get("paths", {}).items():
            pattern = re.compile(_PARAMETER.sub("[^/]+", re.escape(template)))
            table.append((pattern, sorted(m.upper() for m in operations)))
        app.state.documented_paths = table
    return table


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(TaskwireError)
    async def taskwire_error(request: Request, exc: TaskwireError) -> JSONResponse:
        if isinstance(exc, Unavailable):
            # Expected while a dead replica's lease lapses: the client is told when to retry.
            log.info("%s %s refused: %s (%s)", request.method, request.url.path, exc.detail, exc.code)
            response = error_response(exc.status_code, exc.detail, exc.code)
            if exc.retry_after is not None:
                response.headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after)))
            return response
        if exc.status_code >= 500:
            log.error("%s %s: %s", request.method, request.url.path, exc.detail)
        else:  # the client's mistake or a refusal: said, not alarming
            log.info("%s %s refused: %s (%s)", request.method, request.url.path, exc.detail, exc.code)
        return error_response(exc.status_code, exc.detail, exc.code)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        log.info("%s %s refused: %s (invalid_request)", request.method, request.url.path, problems)
        return error_response(422, problems or "invalid request", "invalid_request")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        codes = {400: "invalid_body", 404: "not_found", 405: "method_not_allowed", 413: "body_too_large"}
        response = error_response(exc.status_code, str(exc.detail), codes.get(exc.status_code, "http_error"))
        response.headers.update(exc.headers or {})
        if exc.status_code == 405:
            response.headers["Allow"] = ", ".join(allowed_methods(request))
        return response

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, "internal server error; see the server log", "internal_error")
