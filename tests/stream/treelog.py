"""A conversation tree's log made of real events, recorded and published as the runtime does.

``TreeLog`` assigns ``seq`` like the store, stamps sub-agent events with the runtime's own
``stamp``, keeps every record (the store) and the ones the runtime would publish on the root's
topic (the bus), with their ``prev_seq`` chain: sub-agent records only when forwarding is on.
"""

from __future__ import annotations

import dataclasses
import itertools

from taskwire.events import (
    ActionEvent,
    ACPToolCallEvent,
    Event,
    EventRecord,
    MessageEvent,
    ObservationEvent,
    StreamingDeltaEvent,
    SubagentStartedEvent,
)
from taskwire.runtime.forwarding import stamp
from taskwire.store.rows import event_record
from taskwire.store import EventQuery
from taskwire.stream import EventStream

ROOT = "root"


class TreeLog:
    """One tree's store and bus, fed with real event models."""

    def __init__(self, *, forwarding: bool = True, root_id: str = ROOT) -> None:
        self.root_id = root_id
        self.forwarding = forwarding
        self.stored: list[EventRecord] = []
        self.published: list[EventRecord] = []
        self._seq = 0
        self._prev_seq: int | None = None
        self._spawned: dict[str, tuple[str, str | None]] = {}  # sub-agent -> (its call, its parent sub-agent)
        self._ids = itertools.count(1)

    # -- recording ---------------------------------------------------------------------

    def emit(self, event: Event, conversation_id: str | None = None) -> EventRecord:
        """Record ``event`` in a stream (the root's by default) and publish it where the runtime
        would. Returns the record as stored."""
        conversation_id = conversation_id or self.root_id
        if conversation_id != self.root_id:
            call, _ = self._spawned[conversation_id]
            stamp(event, call, conversation_id)
        if event.ephemeral:
            self._publish(event_record(conversation_id, self.root_id, event), conversation_id)
            return self.published[-1]
        self._seq += 1
        event.seq = self._seq
        timestamp = event.model_dump(mode="json", include={"timestamp"})["timestamp"]
        record = EventRecord(
            self.root_id, conversation_id, self._seq, event.id, event.kind, event.source, timestamp,
            event.subagent_id, event.parent_tool_use_id, event.to_json(),
        )
        self.stored.append(record)
        self._publish(record, conversation_id)
        return record

    def say(self, text: str, conversation_id: str | None = None) -> EventRecord:
        return self.emit(MessageEvent(content=text), conversation_id)

    def delta(self, text: str, conversation_id: str | None = None) -> EventRecord:
        return self.emit(StreamingDeltaEvent(content=text), conversation_id)

    def tool_call(self, status: str, conversation_id: str | None = None, *, acp: bool = False) -> EventRecord:
        call = f"call-{next(self._ids)}"
        if acp:
            return self.emit(ACPToolCallEvent(tool_call_id=call, title="echo", status=status), conversation_id)  # type: ignore[arg-type]
        return self.emit(
            ObservationEvent(tool_name="terminal", tool_call_id=call, content="status", status=status),  # type: ignore[arg-type]
            conversation_id,
        )

    def spawn(self, parent: str | None = None) -> tuple[str, str]:
        """A ``task`` call in ``parent`` (the root by default) and the sub-agent it starts.
        Returns ``(tool_call_id, subagent_id)``."""
        n = next(self._ids)
        call, sub = f"task-call-{n}", f"sub-{n}"
        self.emit(ActionEvent(tool_name="task", tool_call_id=call, arguments={"prompt": "go"}), parent)
        self._spawned[sub] = (call, parent)
        self.emit(SubagentStartedEvent(description=f"job {n}", parent_subagent_id=parent), sub)
        return call, sub

    def _publish(self, record: EventRecord, conversation_id: str) -> None:
        if conversation_id != self.root_id and not self.forwarding:
            return  # forwarding off: a sub-agent's records never reach the bus
        if record.seq is not None:
            record = dataclasses.replace(record, prev_seq=self._prev_seq)
            self._prev_seq = record.seq
        self.published.append(record)

    # -- reading -----------------------------------------------------------------------

    def tree(self) -> list[dict[str, str | None]]:
        """The sub-agent tree as ``full_state["subagents"]`` lists it."""
        return [
            {"subagent_id": sub, "parent_tool_use_id": call, "parent_subagent_id": parent}
            for sub, (call, parent) in self._spawned.items()
        ]

    def seqs(self, conversation_ids: set[str] | None = None, *, after: int = 0) -> list[int]:
        """The stored seqs of those streams (every stream when ``None``) past ``after``."""
        return [
            r.seq for r in self.stored
            if (conversation_ids is None or r.conversation_id in conversation_ids) and (r.seq or 0) > after
        ]

    def answer(self, query: EventQuery, limit: int) -> tuple[list[EventRecord], bool]:
        """A page of ``query`` as the store answers it: ``(records, exhausted)``."""
        # The stream filters by streams and a seq range only.
        assert (query.kinds, query.source, query.body, query.subagent_id, query.parent_tool_use_id) == (None,) * 5
        found = [
            r for r in self.stored
            if query.root_id == r.root_id
            and (query.conversation_ids is None or r.conversation_id in query.conversation_ids)
            and (r.seq or 0) > (query.after_seq or 0)
            and (query.until_seq is None or (r.seq or 0) <= query.until_seq)
        ]
        return found[:limit], len(found) <= limit

    def live_since(self, index: int) -> list[EventRecord]:
        return self.published[index:]


def read_store(stream: EventStream, log: TreeLog, *, page: int = 100) -> list[EventQuery]:
    """Answer the stream's store queries until it needs none; returns the queries asked."""
    asked = []
    while (query := stream.store_query()) is not None:
        asked.append(query)
        records, exhausted = log.answer(query, page)
        stream.receive_stored(records, exhausted=exhausted)
    return asked


def feed_live(stream: EventStream, log: TreeLog, records: list[EventRecord], *, page: int = 100) -> list[EventQuery]:
    """Hand ``records`` to the stream as the bus would, answering the gap fills it asks for."""
    asked = []
    for record in records:
        stream.receive_live(record)
        asked += read_store(stream, log, page=page)
    return asked
