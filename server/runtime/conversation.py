"""ConversationHost: one live conversation (a root or a sub-agent), as backends see it.

It owns the conversation's run task, its inbox of user messages and its status, and it is the
one place events enter the system: ``emit`` stamps (sub-agents), appends to the store, then
hands the record to the conversation's sink (the root's topic publisher, or the forwarding
callback of a sub-agent).

A change that takes several writes (a sub-agent's start or end: its row, then its event) runs
whole, as the store's own (``Store.own``), after this conversation's previous ones: a run
cancelled in the middle of one leaves the row and the stream agreeing, and its clean-up
(``paused``, closed tool calls) is written after it. A status is one write: its event, which
sets the row in the same transaction.

Two mixins keep the class small: ``spending.py`` (usage, subtree totals, budgets) and
``subagent_hosts.py`` (starting and finishing sub-agents).
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Coroutine, Sequence, TypeVar

from ..events import ConversationStateUpdateEvent, Event, PermissionOption
from ..permissions.policy import Approval, agent_approval
from .forwarding import RecordSink, TopicPublisher, stamp
from .history import HISTORY_EVENTS
from .labels import ChildLabels
from .permissions import PermissionResolution, TreePermissions
from .spending import Spending
from .subagent_hosts import SubagentHosts
from .work_state import last_state
from ..settings import Settings
from ..store import ConversationRecord, Store
from ..store.owned import settle
from ..store.rows import event_record

if TYPE_CHECKING:
    from .backends.base import AgentBackend

log = logging.getLogger(__name__)

BackendFactory = Callable[["ConversationHost"], Awaitable["AgentBackend"]]
T = TypeVar("T")


class ConversationHost(Spending, SubagentHosts):
    """A conversation the runtime holds in memory while it may run. Implements ``AgentHost``."""

    def __init__(
        self,
        record: ConversationRecord,
        *,
        store: Store,
        settings: Settings,
        publisher: TopicPublisher,
        sink: RecordSink | None,
        backend_factory: BackendFactory,
        parent: ConversationHost | None = None,
        new_stream: bool = False,  # its stream holds no event yet: every one is emitted through this host
    ) -> None:
        self.record = record
        self.conversation_id = record.id
        self.root_id = record.root_id
        self.workspace = Path(record.workspace or settings.workspace_path)
        self.settings = settings
        self.parent = parent
        self.children: dict[str, ConversationHost] = {}
        self._store = store
        self._publisher = publisher
        self._sink = sink
        self._backend_factory = backend_factory
        self._backend: AgentBackend | None = None
        self._inbox: list[str] = []
        self._pause = asyncio.Event()
        self.task: asyncio.Task[Any] | None = None
        # A root loaded from the store may have spawned sub-agents before: counted when needed.
        self._labels = ChildLabels(self.label, 0 if new_stream or parent is not None else None)
        self._slots: asyncio.Semaphore | None = None
        self.last_used = time.monotonic()
        """When a command last reached this conversation (the runtime unloads idle ones)."""
        self.stop_hook: Callable[[], Awaitable[None]] | None = None
        """How to cancel this sub-agent when a peer agent runs it (set by that backend)."""
        self.steer_hook: Callable[[str], Awaitable[None]] | None = None
        """How to hand a person's message to this sub-agent when a peer agent runs it (set by a
        backend whose peer allows it; ``runtime/capabilities.py``)."""
        self.managed = False
        """A sub-agent run by the task manager (see ``start_subagent``)."""
        self.cancel_pending = False
        """Cancelled before its run task existed: the task manager cancels it as it starts."""
        self._writes = asyncio.Lock()  # this conversation's multi-write changes, one at a time
        inherited = parent.approval if parent is not None else None
        self.approval: Approval = agent_approval(record.agent.get("approval"), settings.approval, inherited)
        """Which of this agent's tool calls wait for a person: its parent's policy joined with
        its own spec's ``approval`` (a root without one takes ``OH_APPROVAL``)."""
        self.permissions: TreePermissions = (
            parent.permissions if parent is not None
            else TreePermissions(self, store, record.root_id, timeout=settings.approval_timeout_s)
        )
        """The tree's waiting permission requests, shared by every host of the tree."""
        self._known: list[Event] | None = [] if new_stream else None
        self._failures = store.health.failures  # a write failing since: the stream may lack what it holds
        self._init_spending(new_stream)
        self._inbox_open = True

    # -- identity -----------------------------------------------------------------------

    @property
    def is_subagent(self) -> bool:
        return self.record.parent_id is not None

    @property
    def label(self) -> str:
        """The deterministic name models see: ``task-1``, ``task-1.2``; the root has none."""
        return self.record.label or ""


    # -- events ---------------------------------------------------------------------------

    async def emit(self, event: Event, *, wait: bool = True) -> None:
        """Record ``event`` in this conversation's stream and publish it once it is durable.

        ``wait=True`` returns once it is durable: use it before anything that cannot be taken
        back (a tool runs, the status changes), so the log says what is about to happen.
        ``wait=False`` returns once it is queued (or, when the store is a full batch behind,
        once there is room): for a producer that only reports, such as a peer agent's stream
        of updates, so it is not held to one commit per event. Either way it is published in
        ``seq`` order, and only once stored; and a waited emit returns after every emit
        queued before it is durable too.
        """
        if self.is_subagent:
            stamp(event, self.record.parent_tool_use_id or "", self.conversation_id)
        if event.ephemeral:
            if self._sink is not None:
                self._sink(event_record(self.conversation_id, self.root_id, event))  # seq stays None
            return
        if self._known is not None and isinstance(event, HISTORY_EVENTS):
            self._known.append(event)  # in the order the store is handed them: seq order
        try:
            if not wait:
                self._store.submit(self.conversation_id, self.root_id, event, self._sink or self._publisher.observe)
                await self._store.room()
                return
            # The store publishes it once durable, in seq order (see EventStore.append), even if this
            # caller is cancelled while it waits. A sub-agent's record that is not published
            # (forwarding off) still reaches the record observers (traces, metrics).
            await self._store.append(self.conversation_id, self.root_id, event, self._sink or self._publisher.observe)
        except BaseException:
            self._known = None  # maybe not stored: the stream says what it holds
            raise

    def known_history(self) -> list[Event] | None:
        """The events of this stream a native agent's history is made of, as reading it back gives
        them, when this host began it and no write failed since (a sub-agent spawned now, a root
        just created); else ``None``: read it. Given once, to the first backend built."""
        known, self._known = self._known, None
        return known if self._store.health.failures == self._failures else None

    async def request_permission(
        self, *, tool_call_id: str, tool_name: str, title: str = "", arguments: dict[str, Any] | None = None,
        options: Sequence[PermissionOption] | None = None, reason: str | None = None,
    ) -> PermissionResolution:
        """Ask a person whether a tool call of this agent may run (see ``AgentHost``)."""
        return await self.permissions.ask(
            self, tool_call_id=tool_call_id, tool_name=tool_name, title=title,
            arguments=arguments, options=options, reason=reason,
        )

    async def emit_in(self, conversation_id: str, event: Event) -> None:
        """Record an already-stamped event in a stream of this tree that has no live host (a
        sub-agent of a run that died), publishing it as its own host would have."""
        own = conversation_id == self.conversation_id or self.settings.forward_subagent_events
        if conversation_id == self.conversation_id:
            self._known = None
        await self._store.append(
            conversation_id, self.root_id, event, self._publisher.publish if own else self._publisher.observe
        )

    @property
    def last_seq(self) -> int:
        """The tree's highest ``seq`` stored through this process (see ``TopicPublisher``)."""
        return self._publisher.last_seq

    async def set_status(self, status: str, reason: str | None = None) -> str | None:
        """Record ``status``: its event, which the store writes with the row (see the module docstring).
        ``reason``: why, when it is not the run's own doing or a person's (the store stopped
        it); stored as the record's ``status_reason`` and on the event. Returns the id of its
        event (``None`` when nothing changed)."""
        return await self.whole(self._record_status(status, reason))

    async def _record_status(self, status: str, reason: str | None = None) -> str | None:
        if self.record.status == status and self.record.status_reason == reason:
            return None
        # Events emitted without waiting are stored first: when REST shows the new status, the
        # stream before it is whole. The store writes the row with the event, in one
        # transaction (``EventRecord.row_update``): the row and the stream agree at every moment.
        await self._store.flush()
        event = ConversationStateUpdateEvent(key="status", value=status, reason=reason)
        await self.emit(event)
        self.record = self.record.model_copy(
            update={"status": status, "status_reason": reason, "updated_at": event.timestamp}
        )
        return event.id

    async def stored_state(self, key: str) -> Any:
        """The last ``key`` state stored in this conversation's own stream (see ``AgentHost``)."""
        return await last_state(self._store, self.root_id, self.conversation_id, key)

    async def whole(self, change: Coroutine[Any, Any, T]) -> T:
        """Run ``change`` (writes of this conversation that belong together) to its end as the
        store's own, after this conversation's earlier ones. A caller cancelled meanwhile
        waits for it to end, then sees its ``CancelledError`` (``store.owned.settle``)."""

        async def in_turn() -> T:
            async with self._writes:
                return await change

        return await settle(self._store.own(in_turn()))

    # -- inbox and control ----------------------------------------------------------------

    def deliver_user_message(self, content: str) -> None:
        self._inbox.append(content)

    @property
    def accepts_messages(self) -> bool:
        """Whether a message delivered now is still taken by this run (its backend has not
        returned): a sub-agent's inbox closes with its run, so nothing sent is left unread."""
        return self._inbox_open

    def close_inbox(self, is_open: bool = False) -> None:
        self._inbox_open = is_open

    def take_user_messages(self) -> list[str]:
        taken, self._inbox = self._inbox, []
        return taken

    @property
    def has_pending_messages(self) -> bool:
        return bool(self._inbox)

    @property
    def pause_requested(self) -> bool:
        return self._pause.is_set()

    def request_pause(self) -> None:
        self._pause.set()

    def clear_pause(self) -> None:
        self._pause.clear()

    async def wait_for_pause(self) -> None:
        await self._pause.wait()

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    async def backend(self) -> AgentBackend:
        if self._backend is None:
            self._backend = await self._backend_factory(self)
            self._known = None  # not kept for a backend that did not take it
        return self._backend

    async def release_backend(self) -> None:
        """At its run's end: drop a backend that holds nothing the store does not (see
        ``AgentBackend.holds_session``); the next run builds it again from the stream."""
        backend = self._backend
        if backend is not None and not backend.holds_session:
            self._backend = None
            await backend.close()

    @property
    def holds_nothing(self) -> bool:
        """No backend and no live sub-agent: everything it knows, the store holds."""
        return self._backend is None and not self.children

    async def close(self, reason: str = "the server stopped the run") -> None:
        """Stop the run (if any) and release the backend. ``reason`` is what a permission
        request left waiting is resolved ``cancelled`` with.

        The run is cancelled first, as an interrupt is: it takes its sub-agents down in order
        (each parent records its child's end), so no parent is cancelled again while it
        records one. Children still held after it (a peer's, which have no run of their own)
        are closed then."""
        if self.running and self.task is not asyncio.current_task():
            assert self.task is not None
            self.task.cancel(reason)
            # wait, not gather: a caller cancelled here must not cancel the run's clean-up
            await asyncio.wait({self.task})
        for child in list(self.children.values()):
            await child.close(reason)
        if self._backend is not None:
            await self._backend.close()
            self._backend = None
