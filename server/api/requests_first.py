"""The middleware that counts the API's unanswered requests for ``RequestsFirst``
(``server/runtime/requests_first.py``): agent steps wait while any is in flight."""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

ANSWERED = frozenset({"http.response.start", "websocket.send", "websocket.close"})
"""What answers a request: its response starts (a stream, SSE, counts until its headers go), a
socket sends its first frame (``full_state``; not its replay) or is closed."""


class CountRequests:
    """Counts every HTTP request and socket opening from its arrival to its answer."""

    def __init__(self, app: ASGIApp, state: Any) -> None:
        self.app = app
        self.state = state  # the app's: the runtime is there once the lifespan has built it

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        runtime = getattr(self.state, "runtime", None)
        if scope["type"] not in ("http", "websocket") or runtime is None:
            await self.app(scope, receive, send)
            return
        answered = runtime.requests_first.arrive()

        async def sending(message: Message) -> None:
            if message["type"] in ANSWERED:
                answered()
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            answered()
