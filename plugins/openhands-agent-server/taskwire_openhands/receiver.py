"""Receive a conversation's events, typed and stamped, from an agent-server with the plugin.

    async for parent_tool_use_id, subagent_id, event in stamped_events(url, conversation_id):
        if parent_tool_use_id is None:
            ...  # the main timeline
        else:
            ...  # nest under the task call whose tool_call_id == parent_tool_use_id

Each item is a ``StampedEvent``: the event as OpenHands' own class (``ActionEvent``,
``MessageEvent``...), with the stamps the frame carried (``None`` for the root conversation's
own events). It reads ``/sockets/events/{conversation_id}`` (``resend_mode="all"`` replays the
root's stored events first; sub-agent events are live only: ``subagent_events/search`` has
them afterwards) and ends when the server closes the socket. The kinds of OpenHands' own tools
(``openhands.tools``) are known; a client of other tools imports their modules first, as for
``RemoteConversation``. A frame that is not an event this OpenHands knows is skipped with a
warning. OpenHands' own ``RemoteConversation`` keeps working
against the same server, but it cannot tell the stamps apart: it logs each stamped frame as an
event it could not read, and its event list holds the parent's events only.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Literal, NamedTuple
from urllib.parse import urlencode

import openhands.tools  # noqa: F401  (the event kinds of OpenHands' own tools, to read their events)
import websockets
from openhands.sdk.event import Event

logger = logging.getLogger(__name__)


class StampedEvent(NamedTuple):
    parent_tool_use_id: str | None
    """The ``tool_call_id`` of the ``task`` call whose sub-agent produced ``event``; ``None``:
    the root conversation's own event."""
    subagent_id: str | None
    """That sub-agent's stable id; ``None`` for the root's own events."""
    event: Event


def events_socket_url(server_url: str, conversation_id: str, resend_mode: Literal["all"] | None = None) -> str:
    """``ws(s)://.../sockets/events/{conversation_id}`` for the server at ``server_url``."""
    base = server_url.rstrip("/").replace("http", "ws", 1)
    query = urlencode({"resend_mode": resend_mode}) if resend_mode else ""
    return f"{base}/sockets/events/{conversation_id}" + (f"?{query}" if query else "")


def parse_frame(text: str | bytes) -> StampedEvent | None:
    """One socket frame as a ``StampedEvent`` (``None``: not an event this OpenHands knows)."""
    try:
        data = json.loads(text)
        parent_tool_use_id = data.pop("parent_tool_use_id", None)
        subagent_id = data.pop("subagent_id", None)
        return StampedEvent(parent_tool_use_id, subagent_id, Event.model_validate(data))
    except (ValueError, TypeError, AttributeError) as exc:
        logger.warning("taskwire-openhands: skipped a frame that is not an OpenHands event: %s", exc)
        return None


async def stamped_events(server_url: str, conversation_id: str, *, session_api_key: str | None = None,
                         resend_mode: Literal["all"] | None = None) -> AsyncIterator[StampedEvent]:
    """Every event the conversation's socket carries, in order, until the server closes it."""
    headers = {"X-Session-API-Key": session_api_key} if session_api_key else {}
    async with websockets.connect(events_socket_url(server_url, conversation_id, resend_mode),
                                  additional_headers=headers, max_size=None) as socket:
        try:
            async for text in socket:
                item = parse_frame(text)
                if item is not None:
                    yield item
        except websockets.ConnectionClosedOK:
            return
