"""``create_app(settings)``: the FastAPI app; its lifespan builds store, bus and runtime onto
``app.state``. No module-level instances: two apps run in one process."""

from __future__ import annotations

import gc
import logging
from contextlib import asynccontextmanager
from typing import AsyncIterator

from fastapi import Depends, FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from .auth import require_api_key
from .errors import error_response, install_error_handlers
from .openapi import document, errors
from .requests_first import CountRequests
from . import agui, sockets, viewer
from .rest import conversations, events, health, permissions, subagents
from .services import hosted
from .webhooks import start_webhooks
from . import metrics as metrics_route
from .metrics import Metrics
from ..hooks import Hooks
from ..runtime.ownership import default_replica_id
from ..settings import Settings
from ..stream.limits import SubscriberLimit, WaitingRoom
from ..telemetry.tracer import RecordTracer, tracing_enabled

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None) -> FastAPI:
    """A taskwire server for ``settings`` (default: from the environment and TOML file)."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        tracer = await start_tracing(app)  # before the host: spans are built from its first record
        try:
            async with hosted(settings, app.state.hooks) as services:
                app.state.store, app.state.bus, app.state.runtime = services.store, services.bus, services.runtime
                services.store.observe_appends(app.state.metrics.append_seconds.observe)
                services.runtime.tracing = tracer is not None
                extensions = await _start_extensions(app)
                app.state.metrics.loop_lag.start()
                extensions.append(app.state.metrics.loop_lag.stop)
                # What is alive now (imported code, the app) lives as long as the process: keep the
                # cyclic collector from walking it again on every full collection. Those walks cost
                # ~50 ms each and came every few thousand events.
                gc.freeze()
                try:
                    yield
                finally:
                    for stop in reversed(extensions):
                        await stop()
        finally:
            if tracer is not None:
                await tracer.stop()  # after the host: the statuses its stopping runs record end their spans
        log.info("taskwire stopped")

    app = FastAPI(
        title="taskwire",
        version=__version__,
        description="An agent server that streams what sub-agents do, live.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.hooks = Hooks.with_builtins(settings)
    app.state.subscriber_limit = SubscriberLimit(settings.max_subscribers)
    app.state.waiting_room = WaitingRoom(settings.max_unauthenticated_sockets)
    app.state.metrics = metrics = Metrics(app.state)
    app.state.hooks.record_observers.append(metrics.records.observe)
    app.state.hooks.event_subscribers.append(metrics.records.published)
    app.state.tracer = None
    install_error_handlers(app)
    app.include_router(health.router)
    secured = [Depends(require_api_key)]
    stored = errors(401, 503)  # a key is needed, and the store is read
    app.include_router(conversations.router, dependencies=secured, responses=stored)
    app.include_router(events.router, dependencies=secured, responses=stored)
    app.include_router(subagents.router, dependencies=secured, responses=stored)
    app.include_router(metrics_route.router, dependencies=secured)
    app.include_router(permissions.router, dependencies=secured, responses=stored)
    app.include_router(sockets.router)  # authenticates itself: header, query or first frame
    app.include_router(agui.router)  # each route names its own auth (the follow route takes a query key)
    app.include_router(viewer.router)
    app.include_router(sockets.fallback)  # last: any other WebSocket path is a 404
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(CountRequests, state=app.state)  # outermost: from a request's arrival
    document(app)
    return app


async def start_tracing(app: FastAPI) -> RecordTracer | None:
    """Export spans built from every stored record, when tracing is configured
    (``server/telemetry/tracer.py``); ``None`` when it is off."""
    settings = app.state.settings
    if not tracing_enabled(settings):
        return None
    tracer = RecordTracer(settings, settings.replica_id or default_replica_id())
    await tracer.start()
    app.state.hooks.record_observers.append(tracer.offer)
    app.state.tracer = tracer
    return tracer


async def _start_extensions(app: FastAPI) -> list:
    """Start webhooks and the like; returns their stop functions."""
    stop = await start_webhooks(app)
    return [stop] if stop is not None else []


class BodyLimit:
    """Refuses request bodies over ``max_bytes`` with 413 ``body_too_large`` before they are
    read whole: at once when the ``Content-Length`` says so; a body without one (chunked) is
    read here up to the limit, and the route gets it only if it stays within."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            if declared.isdigit() and int(declared) > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            await self.app(scope, receive, send)  # the server holds the body to its length
            return
        # Chunked (or no body): read it here, so the limit holds whatever the route does with
        # its body (FastAPI turns an error while reading one into a 400).
        messages: list[Message] = []
        seen = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(413, f"request body over {self.max_bytes} bytes", "body_too_large")
        await response(scope, receive, send)
