"""Session API keys: one check shared by REST, WebSocket and SSE."""

from __future__ import annotations

import hmac

from fastapi import Request

from ..errors import Unauthorized
from ..settings import Settings

HEADER = "X-Session-API-Key"


def api_key_valid(settings: Settings, key: str | None) -> bool:
    """True when no keys are configured, or ``key`` is one of them (compared in constant time)."""
    if not settings.session_api_keys:
        return True
    if not key:
        return False
    try:
        given = key.encode()
    except UnicodeEncodeError:  # a lone surrogate, from a JSON auth frame: no key holds one
        return False
    return any(hmac.compare_digest(given, k.encode()) for k in settings.session_api_keys)


def request_key(request: Request, *, query: bool = False) -> str | None:
    """The key a request sends: the header, a bearer token, or (``query``) ``session_api_key``."""
    key = request.headers.get(HEADER)
    if key is None:
        bearer = request.headers.get("Authorization", "")
        key = bearer.removeprefix("Bearer ").strip() if bearer.startswith("Bearer ") else None
    if key is None and query:
        key = request.query_params.get("session_api_key")
    return key


async def require_api_key(request: Request) -> None:
    """FastAPI dependency for every route but health: 401 without a valid key."""
    if not api_key_valid(request.app.state.settings, request_key(request)):
        raise Unauthorized(f"missing or invalid session API key (send it in the {HEADER} header)")


async def require_api_key_or_query(request: Request) -> None:
    """For streams a browser opens with ``EventSource``, which cannot send headers: the
    ``session_api_key`` query parameter is accepted too, as on the WebSocket."""
    if not api_key_valid(request.app.state.settings, request_key(request, query=True)):
        raise Unauthorized(
            f"missing or invalid session API key (send it in the {HEADER} header or the session_api_key query)"
        )
