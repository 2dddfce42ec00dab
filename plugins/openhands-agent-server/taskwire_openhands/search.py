"""Search a conversation's sub-agent events in what OpenHands persisted for them.

Each sub-agent ``task`` starts is persisted by OpenHands under its parent's folder,
``subagents/<id hex>/`` (nested sub-agents under theirs), one JSON file per event; the
plugin's ``taskwire-subagent.json`` beside them holds the stamp (``records.py``). A search
lists those folders, reads each event file once (they never change once written), and answers
with the frames the socket showed: the event as OpenHands serializes it plus the stamp.

The filters mean what they mean on the server's own ``/events/search``: ``kind`` the class
name, ``source``, ``body`` a case-insensitive substring of a ``MessageEvent``'s text,
``timestamp__gte``/``timestamp__lt`` on the event's own timestamp; plus ``parent_tool_use_id``
(that call's sub-agent and every sub-agent below it) and ``subagent_id``. Events come in
timestamp order (``TIMESTAMP_DESC``: newest first); ``next_page_id`` is the id of the next
page's first event, and a ``page_id`` that is no such event is refused, never taken as the start.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openhands.sdk.conversation.persistence_const import EVENTS_DIR
from openhands.sdk.event import Event, MessageEvent
from openhands.sdk.llm.message import content_to_str

from .records import Run, read_runs
from .persisted import event_files, subagent_folders

CACHED_CONVERSATIONS = 32


class InvalidPageId(ValueError):
    """A ``page_id`` that names no event of this search."""


@dataclass(frozen=True, slots=True)
class Filters:
    """A search's filters; ``None`` matches everything."""

    parent_tool_use_id: str | None = None
    subagent_id: str | None = None
    kind: str | None = None
    source: str | None = None
    body: str | None = None
    timestamp_gte: str | None = None
    timestamp_lt: str | None = None

    def matches(self, entry: Entry) -> bool:
        stamp, event = entry.run.stamp, entry.event
        if self.parent_tool_use_id is not None and self.parent_tool_use_id not in stamp.ancestry:
            return False
        if self.subagent_id is not None and stamp.subagent_id != self.subagent_id:
            return False
        if self.kind is not None and event.kind != self.kind:
            return False
        if self.source is not None and event.source != self.source:
            return False
        if self.timestamp_gte is not None and event.timestamp < self.timestamp_gte:
            return False
        if self.timestamp_lt is not None and event.timestamp >= self.timestamp_lt:
            return False
        return self.body is None or (event.body is not None and self.body.lower() in event.body)


@dataclass(frozen=True, slots=True)
class PersistedEvent:
    """What a search needs of one persisted event file."""

    path: Path
    id: str
    kind: str
    source: str
    timestamp: str
    body: str | None
    """A ``MessageEvent``'s text, lower-cased (what ``body=`` searches); ``None`` for others."""


@dataclass(frozen=True, slots=True)
class Entry:
    event: PersistedEvent
    run: Run
    order: tuple[str, int, int]

    def frame(self) -> dict[str, Any]:
        """The event as the socket showed it: OpenHands' JSON plus the stamp."""
        event = Event.model_validate_json(self.event.path.read_bytes())
        return {**event.model_dump(mode="json", exclude_none=True), **self.run.stamp.wire()}


def _message_text(text: bytes) -> str:
    """What the server's own ``body`` filter reads of a ``MessageEvent``."""
    event = Event.model_validate_json(text)
    assert isinstance(event, MessageEvent)
    parts = content_to_str(event.llm_message.content)
    if event.extended_content:
        parts.extend(content_to_str(event.extended_content))
    if event.reasoning_content:
        parts.append(event.reasoning_content)
    return " ".join(parts).lower()


def _read(path: Path) -> PersistedEvent | None:
    try:
        text = path.read_bytes()
        data = json.loads(text)
        body = _message_text(text) if data.get("kind") == "MessageEvent" else None
        return PersistedEvent(path, data["id"], data["kind"], data["source"], data["timestamp"], body)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # being written (read again next time) or not an event


class SubagentEventIndex:
    """The sub-agent events of recently searched conversations, each file read once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._read: OrderedDict[Path, dict[Path, PersistedEvent]] = OrderedDict()

    def _events(self, conversation_dir: Path, folder: Path) -> list[tuple[int, PersistedEvent]]:
        cache = self._read.setdefault(conversation_dir, {})
        found = []
        for index, name in event_files(folder):
            path = folder / EVENTS_DIR / name
            event = cache.get(path)
            if event is None:
                event = _read(path)
                if event is None:
                    break  # half-written: this folder's later events wait for the next search
                cache[path] = event
            found.append((index, event))
        return found

    def entries(self, conversation_dir: Path) -> list[Entry]:
        """Every forwarded sub-agent event of the conversation, in timestamp order."""
        entries = []
        with self._lock:
            if conversation_dir in self._read:
                self._read.move_to_end(conversation_dir)
            for number, folder in enumerate(subagent_folders(conversation_dir)):
                runs = read_runs(folder)
                if not runs:
                    continue  # not forwarded (the flag was off): not a frame anyone saw
                events = self._events(conversation_dir, folder)
                starts = {event.id: index for index, event in events}
                bounds = sorted((starts[r.first_event_id], r) for r in runs if r.first_event_id in starts)
                for index, event in events:
                    run = next((r for start, r in reversed(bounds) if start <= index), None)
                    if run is not None:
                        entries.append(Entry(event, run, (event.timestamp, number, index)))
            while len(self._read) > CACHED_CONVERSATIONS:
                self._read.popitem(last=False)
        entries.sort(key=lambda e: e.order)
        return entries

    def search(self, conversation_dir: Path, filters: Filters, *, descending: bool = False,
               page_id: str | None = None, limit: int = 100) -> tuple[list[dict[str, Any]], str | None]:
        """One page of frames and the next page's id (``InvalidPageId`` for an unknown one)."""
        matching = [e for e in self.entries(conversation_dir) if filters.matches(e)]
        if descending:
            matching.reverse()
        start = 0
        if page_id is not None:
            start = next((i for i, e in enumerate(matching) if e.event.id == page_id), -1)
            if start < 0:
                raise InvalidPageId(page_id)
        page = matching[start:start + limit]
        following = matching[start + limit] if start + limit < len(matching) else None
        return [e.frame() for e in page], following.event.id if following else None

    def count(self, conversation_dir: Path, filters: Filters) -> int:
        return sum(1 for e in self.entries(conversation_dir) if filters.matches(e))
