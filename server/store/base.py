"""The store interfaces: ``EventStore`` (the log) and ``ConversationStore`` (the records).

One backend class implements both (``store/sqlite.py``, ``store/postgres.py``) and passes
one contract suite (``tests/store/``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Literal, Protocol, Sequence

from pydantic import BaseModel, Field

from server.events import Event, EventRecord, Usage
from server.events.models import ConversationStatus, utc_now

SortOrder = Literal["TIMESTAMP", "TIMESTAMP_DESC"]
MAX_PAGE = 100


@dataclass(frozen=True, slots=True)
class EventQuery:
    """A filter over one conversation tree's log. Every field narrows; ``None`` means any.

    ``conversation_ids`` picks streams (the root's own, sub-agents'); the API resolves
    ``subagent_id`` / ``parent_tool_use_id`` / ``include_subagents`` into it from the tree.
    """

    root_id: str
    conversation_ids: Sequence[str] | None = None
    kinds: Sequence[str] | None = None
    source: str | None = None
    body: str | None = None
    """Case-insensitive substring of the event's JSON."""
    timestamp_gte: datetime | None = None
    timestamp_lt: datetime | None = None
    after_seq: int | None = None
    """Only ``seq > after_seq``."""
    until_seq: int | None = None
    """Only ``seq <= until_seq`` (gap fills use a closed range)."""
    parent_tool_use_id: str | None = None
    """Exact match on the stamped (innermost) column."""
    subagent_id: str | None = None
    """Exact match on the stamped column."""


@dataclass(slots=True)
class EventPage:
    items: list[EventRecord]
    next_page_id: str | None


class ConversationRecord(BaseModel):
    """A conversation as stored: a root, or a sub-agent (a child in a root's tree)."""

    id: str
    root_id: str
    parent_id: str | None = None
    """The conversation that spawned this one (``None`` for a root)."""
    parent_tool_use_id: str | None = None
    """The tool call that spawned this sub-agent."""
    subagent_type: str | None = None
    description: str | None = None
    agent: dict[str, Any] = Field(default_factory=dict)
    """The agent spec it was created with (kind, llm, tools, ...)."""
    workspace: str | None = None
    status: ConversationStatus = "idle"
    """idle, running, paused, finished, error (sub-agents: also completed/cancelled in the tree view)."""
    title: str | None = None
    usage: Usage = Field(default_factory=Usage)
    result: str | None = None
    """A sub-agent's final answer."""
    subagent_status: str | None = None
    """A sub-agent's outcome: running, completed, error, cancelled."""
    label: str | None = None
    """A sub-agent's deterministic name in the tree (``task-1``, ``task-1.2``), shown to models."""
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)

    @property
    def is_root(self) -> bool:
        return self.parent_id is None


@dataclass(slots=True)
class ConversationPage:
    items: list[ConversationRecord]
    next_page_id: str | None


class EventStore(Protocol):
    """The durable log. One tree (a root and all its sub-agents) shares one ``seq`` counter."""

    async def append(self, conversation_id: str, root_id: str, event: Event) -> EventRecord:
        """Store ``event`` in ``conversation_id``'s stream of tree ``root_id``.

        Assigns ``seq`` (strictly increasing per tree), sets ``event.seq``, serializes the
        event once. Durable on return. Concurrent appends are committed together; their
        awaits resume in ``seq`` order, so a caller that publishes right after the await (with
        no other await in between) publishes in ``seq`` order.
        """
        ...

    def submit(
        self, conversation_id: str, root_id: str, event: Event, on_stored: Callable[[EventRecord], None]
    ) -> None:
        """``append`` without waiting: ``on_stored`` is called with the record once it is
        durable, in ``seq`` order with the other appends' resumed callers. A failure is
        logged (nobody waits for it). Await ``room`` before submitting more: it is how a
        producer that does not wait is slowed to the store's pace."""
        ...

    async def room(self) -> None:
        """Return once the store's queue of appends has room (at once, normally)."""
        ...

    async def flush(self) -> None:
        """Return once every append and submit made so far is stored (or has failed)."""
        ...

    async def search(
        self,
        query: EventQuery,
        *,
        limit: int = MAX_PAGE,
        page_id: str | None = None,
        order: SortOrder = "TIMESTAMP",
    ) -> EventPage:
        """One page of matches in ``seq`` order (or reverse). Keyset pagination: a page costs
        the same wherever it starts. Raises ``InvalidPageId`` for a token it did not make for
        this order."""
        ...

    async def count(self, query: EventQuery) -> int: ...

    async def get(self, event_id: str) -> EventRecord | None: ...

    async def get_many(self, event_ids: Sequence[str]) -> list[EventRecord]:
        """The events found, in the order asked; missing ids are left out."""
        ...

    async def last_seq(self, root_id: str) -> int:
        """The tree's highest ``seq`` (0 when empty)."""
        ...


class ConversationStore(Protocol):
    """Conversation records (roots and sub-agents)."""

    async def create_conversation(self, record: ConversationRecord) -> None: ...

    async def update_conversation(self, conversation_id: str, **fields: Any) -> ConversationRecord:
        """Set ``fields`` and ``updated_at``; raises ``ConversationNotFound``."""
        ...

    async def get_conversation(self, conversation_id: str) -> ConversationRecord | None: ...

    async def tree(self, root_id: str) -> list[ConversationRecord]:
        """Every conversation of the tree, root first, then by creation."""
        ...

    async def search_conversations(
        self, *, status: str | None = None, limit: int = MAX_PAGE, page_id: str | None = None
    ) -> ConversationPage:
        """Root conversations, newest first."""
        ...

    async def count_conversations(self, *, status: str | None = None) -> int: ...

    async def delete_conversation(self, conversation_id: str) -> None:
        """Delete a root and its whole tree (records and events)."""
        ...


class Store(EventStore, ConversationStore, Protocol):
    """What a backend provides: both interfaces plus a lifecycle."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...
