"""Forwarding: where a sub-agent's events get their stamp and reach the root's socket.

Every event of a sub-agent is stamped (``parent_tool_use_id``, ``subagent_id``) and stored in
the sub-agent's own stream, whatever the flag. With ``OH_FORWARD_SUBAGENT_EVENTS`` on, the
stored record is also published on the root's topic. It is never appended to the parent's
stream and never shown to the parent model: the parent only ever sees the ``task`` tool's
observation.
"""

from __future__ import annotations

from typing import Callable

from ..bus import Bus
from ..events import Event, EventRecord

RecordSink = Callable[[EventRecord], None]
"""Takes a stored (or ephemeral) record; must not block."""


def stamp(event: Event, parent_tool_use_id: str, subagent_id: str) -> Event:
    """Stamp ``event`` as a sub-agent's. Innermost stamp wins: an event already stamped by a
    deeper level (a peer's own sub-agent) keeps its stamp."""
    if event.subagent_id is None and event.parent_tool_use_id is None:
        event.parent_tool_use_id = parent_tool_use_id
        event.subagent_id = subagent_id
    return event


class TopicPublisher:
    """Publishes one tree's records on its bus topic, in ``seq`` order, chaining ``prev_seq``.

    ``prev_seq`` lets a subscriber tell a gap (a record the bus lost) from a seq that was never
    published (a sub-agent's, with forwarding off). ``sinks`` see what is published;
    ``observers`` see every stored record of the tree, published or not (``observe``).
    """

    def __init__(
        self, bus: Bus, root_id: str, last_seq: int, sinks: list[RecordSink], observers: list[RecordSink] | None = None
    ) -> None:
        self._bus = bus
        self._root_id = root_id
        self._prev_seq = last_seq or None
        self._sinks = sinks
        self._observers = observers if observers is not None else []
        self.last_seq = last_seq
        """The tree's highest ``seq`` stored through this publisher (or before it was made),
        published or only observed."""

    def publish(self, record: EventRecord) -> None:
        if record.seq is not None:
            record.prev_seq = self._prev_seq
            self._prev_seq = record.seq
            self.last_seq = max(self.last_seq, record.seq)
            for observer in self._observers:
                observer(record)
        self._bus.publish(self._root_id, record)
        for sink in self._sinks:
            sink(record)

    def observe(self, record: EventRecord) -> None:
        """A stored record of the tree that is not published (a sub-agent's, forwarding off):
        only the observers see it."""
        if record.seq is not None:
            self.last_seq = max(self.last_seq, record.seq)
        for observer in self._observers:
            observer(record)


def forwarder(publisher: TopicPublisher, enabled: bool) -> RecordSink | None:
    """The forwarding callback a sub-agent's conversation calls with each of its records:
    publish on the root's topic when forwarding is on; ``None`` when it is off (its host then
    shows its stored records to the record observers only: traces and metrics see the tree)."""
    return publisher.publish if enabled else None
