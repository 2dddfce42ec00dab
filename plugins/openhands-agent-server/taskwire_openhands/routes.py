"""``GET /api/conversations/{id}/subagent_events/search`` and ``/count`` on the agent-server.

Mounted beside the server's own routes with its own dependencies (the session API key, the
initialization gate); a conversation the server does not know is its own 404.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse
from openhands.agent_server.dependencies import get_event_service
from openhands.agent_server.event_router import normalize_datetime_to_server_timezone
from openhands.agent_server.models import EventSortOrder

from .search import Filters, InvalidPageId, SubagentEventIndex

Text = Annotated[str | None, Query()]
Moment = Annotated[datetime | None, Query()]


def _filters(parent_tool_use_id: str | None, subagent_id: str | None, kind: str | None, source: str | None,
             body: str | None, timestamp__gte: datetime | None, timestamp__lt: datetime | None) -> Filters:
    def moment(value: datetime | None) -> str | None:
        # As the server's own search: naive server-local time, compared as ISO text.
        return normalize_datetime_to_server_timezone(value).isoformat() if value is not None else None

    return Filters(parent_tool_use_id, subagent_id, kind, source, body, moment(timestamp__gte), moment(timestamp__lt))


def subagent_events_router(index: SubagentEventIndex) -> APIRouter:
    """The two routes, reading through ``index``."""
    router = APIRouter(prefix="/conversations/{conversation_id}/subagent_events", tags=["Sub-agent events"])

    @router.get("/search", responses={400: {"description": "Unknown page_id"}, 404: {"description": "Conversation not found"}})
    async def search_subagent_events(
        page_id: Text = None,
        limit: Annotated[int, Query(gt=0, le=100)] = 100,
        parent_tool_use_id: Annotated[str | None, Query(description="That call's sub-agent and every sub-agent below it")] = None,
        subagent_id: Text = None, kind: Text = None, source: Text = None,
        body: Annotated[str | None, Query(description="Case-insensitive text of a MessageEvent")] = None,
        sort_order: EventSortOrder = EventSortOrder.TIMESTAMP,
        timestamp__gte: Moment = None, timestamp__lt: Moment = None,
        event_service=Depends(get_event_service),  # noqa: B008  (FastAPI's way)
    ) -> JSONResponse:
        """Sub-agent events of the conversation's tree, as its socket showed them: ``{items, next_page_id}``."""
        filters = _filters(parent_tool_use_id, subagent_id, kind, source, body, timestamp__gte, timestamp__lt)
        try:
            items, next_page_id = await asyncio.to_thread(
                index.search, event_service.conversation_dir, filters,
                descending=sort_order == EventSortOrder.TIMESTAMP_DESC, page_id=page_id, limit=limit)
        except InvalidPageId:
            return JSONResponse({"detail": f"page_id {page_id!r} is not an event of this search"}, status_code=400)
        return JSONResponse({"items": items, "next_page_id": next_page_id})

    @router.get("/count", responses={404: {"description": "Conversation not found"}})
    async def count_subagent_events(
        parent_tool_use_id: Text = None, subagent_id: Text = None, kind: Text = None, source: Text = None,
        body: Text = None, timestamp__gte: Moment = None, timestamp__lt: Moment = None,
        event_service=Depends(get_event_service),  # noqa: B008
    ) -> int:
        """How many sub-agent events match (the same filters)."""
        filters = _filters(parent_tool_use_id, subagent_id, kind, source, body, timestamp__gte, timestamp__lt)
        return await asyncio.to_thread(index.count, event_service.conversation_dir, filters)

    return router
