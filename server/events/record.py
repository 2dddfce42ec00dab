"""EventRecord: an event as the store keeps it and the bus carries it.

The JSON is made once, at append, and sent as it is to every client: replay and live
delivery never re-serialize. The other fields route and filter without parsing the JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class EventRecord:
    """One serialized event with the metadata needed to route and filter it.

    Not frozen, though nothing changes a record once made but the publisher (``prev_seq``):
    a frozen dataclass takes five times as long to build, and one is built for every event
    appended, published or replayed.
    """

    root_id: str
    """The conversation tree (its root conversation's id)."""
    conversation_id: str
    """The stream the event belongs to: the root's own, or a sub-agent's."""
    seq: int | None
    """Position in the tree's log; ``None`` for ephemeral events."""
    id: str
    kind: str
    source: str
    timestamp: str
    subagent_id: str | None
    parent_tool_use_id: str | None
    json: str
    """The exact wire JSON (``exclude_none``), ``seq`` included."""
    prev_seq: int | None = None
    """Bus only: the ``seq`` of the previous record published on this topic, to detect gaps."""
    body: str | None = field(default=None, compare=False, repr=False)
    """Append only: the event's folded readable text (``taskwire.events.body_text``), which the
    store keeps beside the JSON for ``body=`` searches; ``None`` on records read back."""
    row_update: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    """Append only: the fields of its conversation's record that the event states (a status
    event's ``status`` and ``status_reason``; a ``SubagentFinishedEvent``'s ``subagent_status``
    and ``result``), which the store writes on the row in the event's own transaction, so the
    row and its stream agree at every moment (``None``: the event states none)."""

    @property
    def is_subagent_event(self) -> bool:
        return self.conversation_id != self.root_id

