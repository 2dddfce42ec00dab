"""The plugin inside the running agent-server: imported only there, with forwarding on.

It adds to the server's own app (``openhands.agent_server.api.api``, which uvicorn then serves):
the two search routes, behind the server's own auth; a pass-through ASGI middleware that learns
the server's event loop; and the stamped ``task`` tool set, whose resolver attaches a stamper
to each root conversation at its first ``task`` call, publishing to that conversation's
subscribers.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fastapi import Depends, FastAPI

from .publisher import Publisher
from .routes import subagent_events_router
from .search import SubagentEventIndex
from .stamping import SubagentStamper, install

logger = logging.getLogger(__name__)
FIND_TIMEOUT = 30.0


class Forwarding:
    """Forwarding in one agent-server app."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.loop: asyncio.AbstractEventLoop | None = None
        self.index = SubagentEventIndex()

    def stamper_for(self, conversation: Any) -> SubagentStamper | None:
        """On OpenHands' thread, at a root conversation's first ``task`` call: the stamper
        publishing to that conversation's subscribers (``None``: not one the server serves)."""
        loop, service = self.loop, getattr(self.app.state, "conversation_service", None)
        if loop is None or service is None:
            return None
        try:
            found = asyncio.run_coroutine_threadsafe(service.get_event_service(conversation.id), loop)
            event_service = found.result(FIND_TIMEOUT)
            served = event_service is not None and event_service.get_conversation() is conversation
        except Exception:
            logger.exception("taskwire-openhands: no forwarding for conversation %s", getattr(conversation, "id", "?"))
            return None
        return SubagentStamper(Publisher(event_service, loop)) if served else None


class LearnLoop:
    """Pure ASGI pass-through that records the server's running loop (at its lifespan start)."""

    def __init__(self, app: Any, forwarding: Forwarding) -> None:
        self.app = app
        self.forwarding = forwarding

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.forwarding.loop is None:
            self.forwarding.loop = asyncio.get_running_loop()
        await self.app(scope, receive, send)


def install_into_agent_server() -> Forwarding:
    """Add forwarding to the agent-server's app, before uvicorn starts it."""
    from openhands.agent_server.api import api
    from openhands.agent_server.dependencies import check_session_api_key
    from openhands.agent_server.init_router import require_initialized

    forwarding = Forwarding(api)
    api.add_middleware(LearnLoop, forwarding=forwarding)
    api.include_router(subagent_events_router(forwarding.index), prefix="/api",
                       dependencies=[Depends(require_initialized), Depends(check_session_api_key)])
    install(resolve=forwarding.stamper_for)
    return forwarding
