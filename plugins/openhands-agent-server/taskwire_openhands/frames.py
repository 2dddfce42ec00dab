"""The frame a sub-agent's event is published as on the agent-server: the event's own JSON plus
``parent_tool_use_id`` and ``subagent_id``.

It is an ``Event`` (the server's subscribers are typed for events, and its session socket wraps
what it gets in a frame typed ``Event``) of a kind of its own, so no subscriber that acts on a
parent's event kind mistakes it for one (the auto-title subscriber reads the parent's first user
``MessageEvent``; a sub-agent's prompt is a user ``MessageEvent`` too). Every way the server
serializes it (``model_dump`` for the socket and webhooks, the session socket's envelope)
gives the sub-agent's event exactly as OpenHands serializes it, its ``kind`` included, with the
two stamps added. It is only ever published, never appended to a log.

This module defines an ``Event`` subclass, which joins OpenHands' union of event kinds: it is
imported only when forwarding is on.
"""

from __future__ import annotations

from typing import Any

from openhands.sdk.event import Event

from .stamping import Stamp


class SubagentEventFrame(Event):
    """A sub-agent's event, stamped, as published on the root conversation's subscribers."""

    event: Event
    parent_tool_use_id: str
    subagent_id: str

    @classmethod
    def of(cls, stamp: Stamp, event: Event) -> SubagentEventFrame:
        """The frame for ``event`` of the sub-agent ``stamp`` names (no validation, no copy)."""
        return cls.model_construct(event=event, parent_tool_use_id=stamp.parent_tool_use_id,
                                   subagent_id=stamp.subagent_id, id=event.id, timestamp=event.timestamp,
                                   source=event.source)

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        """The sub-agent's event as OpenHands dumps it, plus the stamps."""
        kwargs.pop("include", None)
        kwargs.pop("exclude", None)
        return {**self.event.model_dump(**kwargs), "parent_tool_use_id": self.parent_tool_use_id,
                "subagent_id": self.subagent_id}

    def model_dump_json(self, **kwargs: Any) -> str:  # type: ignore[override]
        import json

        indent = kwargs.pop("indent", None)
        return json.dumps(self.model_dump(mode="json", **kwargs), indent=indent, ensure_ascii=False)
