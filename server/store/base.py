"""The store interfaces: ``EventStore`` (the log) and ``ConversationStore`` (the records).

One backend class implements both (``store/sqlite.py``, ``store/postgres.py``) and passes
one contract suite (``tests/store/``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
import asyncio
from typing import Any, Callable, Coroutine, Literal, Protocol, Sequence, TypeVar

from pydantic import BaseModel, Field

from ..events import Event, EventRecord, Usage
from taskwire_client.events import ConversationStatus, utc_now
from .health import StoreHealth

T = TypeVar("T")
SortOrder = Literal["TIMESTAMP", "TIMESTAMP_DESC"]
MAX_PAGE = 100
MAX_SEQ = 2**63 - 1
"""The largest ``seq`` a store can hold (a signed 64-bit column in both databases): a bound
anything taking a ``seq`` from a client checks first."""


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
    """A substring of the text a person reads in the event, under Unicode case folding:
    ``fold(body) in body_text(event)`` (``taskwire.events.body_text``), never field names."""
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
    status_reason: str | None = None
    """Why the conversation has its status when neither its run nor a person chose it (the
    store stopped the run: ``paused`` until the store writes again and it resumes)."""
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

    async def append(
        self, conversation_id: str, root_id: str, event: Event, on_stored: Callable[[EventRecord], None] | None = None
    ) -> EventRecord:
        """Store ``event`` in ``conversation_id``'s stream of tree ``root_id``.

        Assigns ``seq`` (strictly increasing per tree), sets ``event.seq``, serializes the
        event once. Durable on return. Concurrent appends are committed together; their
        awaits resume in ``seq`` order, so a caller that publishes right after the await (with
        no other await in between) publishes in ``seq`` order. ``on_stored`` is called with
        the record once it is durable, in that same order, whether or not the caller still
        waits: a caller cancelled while it waits leaves its event stored, and published by
        ``on_stored``. Raises ``StoreUnavailable`` when the database fails.
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

    def observe_appends(self, observer: Callable[[float], None] | None) -> None:
        """Call ``observer`` with the seconds each stored append took, from queued to
        stored (the append latency metric). It runs on the writer's path: it must be cheap."""
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

    async def update_conversation(
        self, conversation_id: str, *, held: ConversationRecord | None = None, **fields: Any
    ) -> ConversationRecord:
        """Set ``fields`` and ``updated_at``; returns the record as stored; raises
        ``ConversationNotFound``. ``held``: the caller's copy of the record, which nothing but
        it writes (a live host's own): a store may return it with the fields set rather than
        read the record back."""
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
    """What a backend provides: both interfaces plus a lifecycle.

    Every write is the store's own (``store/owned.py``): it runs in a task of the store's, so
    a caller cancelled while it waits never cuts it half way; the write commits whole or not
    at all, and the next one works. A database that fails (a full or read-only disk, a lock
    held past the timeout, a lost connection) raises ``StoreUnavailable``; the store reopens
    its connections by itself once the cause is gone.
    """

    health: StoreHealth
    """Whether the last write succeeded, why not, and how many have failed."""

    async def open(self) -> None:
        """Connect and migrate. Cancelled, it ends what it started, closes, then raises."""
        ...

    async def close(self) -> None:
        """Wait for the writes in progress (``own``-ed ones too), then release everything."""
        ...

    def own(self, work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Run ``work``, a write of several steps that belong together (a status row and its
        event), in a task the store owns: it runs to its end whatever happens to whoever
        awaits it, and ``close`` waits for it. Await it with ``store.owned.settle``."""
        ...

    async def ready(self) -> str | None:
        """``None`` when the store reads and takes a write now, else the reason it does not."""
        ...
