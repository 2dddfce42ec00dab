"""Frames of the event socket as typed events, and what they say about a run.

A frame is an event (``kind`` set) or, answering something the client sent, a ``{"type": ...}``
object. Events of kinds this client does not know (a newer server) arrive as ``UnknownEvent``
with every field kept, so a client never breaks on an addition.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ConfigDict, ValidationError

from taskwire_client.errors import ProtocolError
from taskwire_client.events import EVENT_KINDS, ConversationStateUpdateEvent, Event, parse_event

RUN_ENDS = frozenset({"finished", "error", "paused"})
"""Root statuses that end a run."""


class UnknownEvent(Event):
    """An event of a kind this client does not know; its other fields are kept as extras."""

    model_config = ConfigDict(extra="allow")


def parse_frame(data: str | bytes | dict[str, Any]) -> Event | None:
    """The event a frame holds, or ``None`` for a frame that is not an event (an answer to an
    inbound frame). Raises ``ProtocolError`` for a known kind that does not validate."""
    frame = json.loads(data) if isinstance(data, (str, bytes)) else data
    if not isinstance(frame, dict) or "kind" not in frame:
        return None
    if frame["kind"] not in EVENT_KINDS:
        return UnknownEvent.model_validate(frame)
    try:
        return parse_event(frame)
    except ValidationError as exc:
        raise ProtocolError(f"invalid {frame['kind']} frame: {exc}") from exc


def run_ended_text(status: str | None, error: str | None) -> str:
    """``status``, and for a run that ended in error, why (the agent's error message)."""
    status = status or "unknown"
    return f"{status}: {error}" if status == "error" and error else status


def root_status(event: Event) -> str | None:
    """The root conversation's new status, if ``event`` is a change of it."""
    if isinstance(event, ConversationStateUpdateEvent) and event.key == "status" and event.subagent_id is None:
        return str(event.value)
    return None


def is_full_state(event: Event) -> bool:
    """True for the socket's first frame (status, ``last_seq``, the sub-agent tree)."""
    return isinstance(event, ConversationStateUpdateEvent) and event.key == "full_state"
