"""Permissions, live: the tool calls of one conversation tree that wait for a person.

One ``TreePermissions`` per tree, held by the root's host and shared by every sub-agent host
below it. A backend asks through its host (``AgentHost.request_permission``); the request is
stored in the asking agent's stream (stamped like its other events), the root's stream gets
``pending_permissions``, and the caller waits until one of these resolves it, whichever comes
first (the others then get ``PermissionResolved``, a 409):

- an answer (``Runtime.answer_permission``: REST, a socket frame, a projection);
- an earlier ``allow_always`` / ``reject_always`` answer for the same tool in this tree
  (``answered_by="policy"``), also one given while this request waited;
- ``OH_APPROVAL_TIMEOUT_S`` (``timed_out``, treated as rejected);
- the caller's cancellation (interrupt, sub-agent cancel, delete, shutdown): ``cancelled``,
  recorded before the ``CancelledError`` goes on.

Resolving is synchronous (the first caller wins, with no await in between); recording the
``PermissionResolvedEvent`` and the new pending set runs in a task of its own, so a cancelled
answerer never leaves a request resolved in memory and not in the store. The waiting caller
resumes only after both are stored, so the log says the call was allowed before it runs.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Sequence

from ..errors import PermissionNotFound, PermissionResolved, StoreUnavailable
from ..events import (
    ConversationStateUpdateEvent,
    Event,
    PermissionOption,
    PermissionRequestEvent,
    PermissionResolvedEvent,
    parse_event,
)
from taskwire_client.ids import new_event_id
from taskwire_client.events import PermissionOutcome
from ..permissions.answers import PermissionAnswer, choose_option, outcome_of, remembered_option
from ..permissions.ledger import KINDS, PermissionLedger, pending_summary
from ..permissions.requests import NATIVE_OPTIONS
from .tree import descendants
from ..store import ConversationRecord, EventQuery, Store

log = logging.getLogger(__name__)

PERSON_SURFACES = frozenset({"rest", "socket", "acp", "agui"})
"""``answered_by`` values that mean a person answered (the event's ``source`` is ``user``)."""

CANCELLED_REASON = "the run stopped before anyone answered"


class Stream(Protocol):
    """Where a request is stored: the host of the agent that asks (``ConversationHost``)."""

    async def emit(self, event: Event, *, wait: bool = True) -> None: ...


@dataclass(frozen=True, slots=True)
class PermissionResolution:
    """How a request ended, as the asking backend reads it."""

    outcome: PermissionOutcome
    """``allowed``, ``rejected``, ``cancelled`` or ``timed_out`` (treat as rejected)."""
    option_id: str | None
    """The option chosen, as the asker offered it (``None`` when nobody chose)."""
    reason: str | None
    """The person's reason, or why it ended without an answer."""
    answered_by: str | None
    """The surface that answered (``rest``, ``socket``, ``policy``, ``timeout``, ``server`` ...)."""
    event: PermissionResolvedEvent
    """The stored event."""

    @property
    def allowed(self) -> bool:
        return self.outcome == "allowed"

    @classmethod
    def of(cls, event: PermissionResolvedEvent) -> PermissionResolution:
        return cls(event.outcome, event.option_id, event.reason, event.answered_by, event)


@dataclass(eq=False)
class _Waiting:
    stream: Stream
    request: PermissionRequestEvent
    done: asyncio.Future[PermissionResolvedEvent]
    announced: bool = False
    """Its request is stored (so it counts in ``pending_permissions``)."""
    recording: asyncio.Task[PermissionResolvedEvent] | None = field(default=None)
    """Set once resolved: records the answer, then wakes the caller."""


class TreePermissions:
    """The waiting requests of one tree (see the module docstring)."""

    def __init__(self, root: Stream, store: Store, root_id: str, *, timeout: float | None) -> None:
        self._root = root
        self._store = store
        self._root_id = root_id
        self._timeout = timeout
        self._waiting: dict[str, _Waiting] = {}
        self._remembered: dict[str, Literal["allow", "reject"]] | None = None
        self._published: tuple[str, ...] = ()
        self._publishing = asyncio.Lock()

    # -- asking -------------------------------------------------------------------------

    async def ask(
        self,
        stream: Stream,
        *,
        tool_call_id: str,
        tool_name: str,
        title: str = "",
        arguments: dict[str, Any] | None = None,
        options: Sequence[PermissionOption] | None = None,
        reason: str | None = None,
    ) -> PermissionResolution:
        """File a request in ``stream`` and wait for its resolution (``AgentHost.request_permission``)."""
        request = PermissionRequestEvent(
            request_id=new_event_id(),  # UUIDv7, as DESIGN says
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            title=title or tool_name,
            arguments=dict(arguments or {}),
            options=list(options) if options else list(NATIVE_OPTIONS),
            reason=reason,
        )
        entry = _Waiting(stream, request, asyncio.get_running_loop().create_future())
        self._waiting[request.request_id] = entry
        try:
            # Loaded before the request is out, so every answer finds the tree's memory there.
            remembered = await self._remembered_answers()
            await stream.emit(request)
            entry.announced = True
            decided = remembered.get(tool_name)
            if decided is None or not self._decide_by_policy(entry, decided):
                await self._publish_pending()
            return PermissionResolution.of(await self._wait(entry))
        except asyncio.CancelledError as exc:
            await self._cancel(entry, exc)
            raise
        except BaseException:
            # The request could not be filed (the store failed): nothing waits on it.
            if entry.recording is None:
                self._waiting.pop(request.request_id, None)
            raise

    async def _wait(self, entry: _Waiting) -> PermissionResolvedEvent:
        if self._timeout is None:
            return await asyncio.shield(entry.done)
        try:
            return await asyncio.wait_for(asyncio.shield(entry.done), self._timeout)
        except TimeoutError:
            if entry.recording is None:  # else an answer came in the same instant: it counts
                self._resolve(entry, "timed_out", reason=f"no answer within {self._timeout:g} s", answered_by="timeout")
            return await asyncio.shield(entry.done)

    async def _cancel(self, entry: _Waiting, exc: asyncio.CancelledError) -> None:
        if entry.recording is None:
            reason = exc.args[0] if exc.args and isinstance(exc.args[0], str) else CANCELLED_REASON
            self._resolve(entry, "cancelled", reason=reason, answered_by="server")
        try:
            await asyncio.shield(entry.done)
        except asyncio.CancelledError:
            pass  # cancelled again: the recording goes on in its own task

    # -- answering ----------------------------------------------------------------------

    def is_waiting(self, request_id: str) -> bool:
        return request_id in self._waiting

    def request(self, request_id: str) -> PermissionRequestEvent:
        """A waiting request; ``PermissionNotFound`` when none waits under that id here."""
        entry = self._waiting.get(request_id)
        if entry is None:
            raise PermissionNotFound(request_id)
        return entry.request

    async def answer(self, request_id: str, answer: PermissionAnswer, *, answered_by: str) -> PermissionResolvedEvent:
        """Resolve a waiting request with a person's answer; returns the stored event.
        ``PermissionNotFound`` if none waits under that id here, ``PermissionResolved`` if it
        already has its answer, ``InvalidPermissionAnswer`` for an option it did not offer."""
        entry = self._waiting.get(request_id)
        if entry is None:
            raise PermissionNotFound(request_id)
        if entry.recording is not None:
            raise PermissionResolved(f"permission request {request_id!r} already has its answer")
        option = choose_option(entry.request.options, answer)
        recording = self._resolve(
            entry, outcome_of(option), option_id=option.option_id, reason=answer.reason, answered_by=answered_by
        )
        return await asyncio.shield(recording)

    def _resolve(
        self,
        entry: _Waiting,
        outcome: PermissionOutcome,
        *,
        option_id: str | None = None,
        reason: str | None = None,
        answered_by: str,
    ) -> asyncio.Task[PermissionResolvedEvent]:
        # Synchronous from the check to the task: the first resolution wins.
        if entry.recording is not None:
            raise PermissionResolved(f"permission request {entry.request.request_id!r} already has its answer")
        event = PermissionResolvedEvent(
            request_id=entry.request.request_id,
            tool_call_id=entry.request.tool_call_id,
            outcome=outcome,
            option_id=option_id,
            reason=reason,
            answered_by=answered_by,
            source="user" if answered_by in PERSON_SURFACES else "environment",
        )
        entry.recording = asyncio.ensure_future(self._record(entry, event))
        return entry.recording

    async def _record(self, entry: _Waiting, event: PermissionResolvedEvent) -> PermissionResolvedEvent:
        try:
            await entry.stream.emit(event)
        except StoreUnavailable as exc:  # told by the store; reconciling the run closes it again
            log.warning("could not store the answer to permission request %s: %s", event.request_id, exc.reason)
        except Exception:  # the answer still stands for the waiting call; the log lacks it
            log.exception("could not store the answer to permission request %s", event.request_id)
        finally:
            self._waiting.pop(event.request_id, None)
        try:
            self._remember(entry.request, event)
            await self._publish_pending()
        except StoreUnavailable:
            pass  # the store said so; the set is published again when the run is reconciled
        except Exception:
            log.exception("could not publish the pending permissions of %s", self._root_id)
        finally:
            if not entry.done.done():
                entry.done.set_result(event)
        return event

    # -- remembered answers (allow_always / reject_always) ------------------------------

    async def _remembered_answers(self) -> dict[str, Literal["allow", "reject"]]:
        if self._remembered is None:
            # Read once per loaded tree: an answer given before a restart or on another
            # replica holds too.
            remembered = (await read_ledger(self._store, self._root_id)).remembered()
            if self._remembered is None:
                self._remembered = remembered
        return self._remembered

    def _remember(self, request: PermissionRequestEvent, event: PermissionResolvedEvent) -> None:
        if event.answered_by == "policy" or event.option_id is None:
            return
        option = next((o for o in request.options if o.option_id == event.option_id), None)
        if option is None or not option.kind.endswith("_always"):
            return
        decision: Literal["allow", "reject"] = "allow" if option.kind == "allow_always" else "reject"
        if self._remembered is not None:
            self._remembered[request.tool_name] = decision
        # It holds for the same tool's requests already waiting in this tree, too.
        for other in list(self._waiting.values()):
            if other.request.tool_name == request.tool_name and other.recording is None and other.announced:
                self._decide_by_policy(other, decision)

    def _decide_by_policy(self, entry: _Waiting, decision: Literal["allow", "reject"]) -> bool:
        """Resolve ``entry`` by an earlier ``*_always`` answer; ``False`` when the asker offers
        no option for it (then a person decides)."""
        option = remembered_option(entry.request.options, decision)
        if option is None:
            return False
        self._resolve(
            entry, outcome_of(option), option_id=option.option_id,
            reason=f"an earlier {decision}_always answer for {entry.request.tool_name}", answered_by="policy",
        )
        return True

    # -- the tree's pending set ---------------------------------------------------------

    def pending(self) -> list[dict[str, Any]]:
        """What ``pending_permissions`` holds now: announced, unresolved requests, oldest first."""
        return [
            pending_summary(entry.request)
            for entry in self._waiting.values()
            if entry.announced and entry.recording is None
        ]

    async def _publish_pending(self, *, force: bool = False) -> None:
        # One at a time, each computed under the lock: the stored values follow the set's
        # changes in order, and an unchanged set is not written again.
        async with self._publishing:
            value = self.pending()
            ids = tuple(entry["request_id"] for entry in value)
            if ids == self._published and not force:
                return
            await self._root.emit(ConversationStateUpdateEvent(key="pending_permissions", value=value))
            self._published = ids

    async def publish_recovered(self) -> None:
        """Store the pending set as it is now, after recovery closed requests that no caller
        waits for any more (the run of a process that died): subscribers see it empty."""
        await self._publish_pending(force=True)


async def read_ledger(store: Store, root_id: str, conversation_ids: Sequence[str] | None = None) -> PermissionLedger:
    """The tree's permission requests and answers, from the store (``conversation_ids``: only
    those streams)."""
    ledger = PermissionLedger()
    query = EventQuery(root_id=root_id, conversation_ids=conversation_ids, kinds=list(KINDS))
    page_id = None
    while True:
        page = await store.search(query, limit=100, page_id=page_id)
        for record in page.items:
            ledger.take(parse_event(record.json))
        page_id = page.next_page_id
        if page_id is None:
            return ledger


async def ledger_below(store: Store, record: ConversationRecord) -> PermissionLedger:
    """The requests of ``record``'s conversation and every sub-agent below it (a root: the
    whole tree)."""
    streams = None if record.is_root else descendants(await store.tree(record.root_id), record.id)
    return await read_ledger(store, record.root_id, streams)


async def answer_below(
    store: Store,
    permissions: TreePermissions,
    record: ConversationRecord,
    request_id: str,
    answer: PermissionAnswer,
    answered_by: str,
) -> PermissionResolvedEvent:
    """Answer request ``request_id`` of the tree below ``record`` (on the replica that owns it).
    The first answer wins: ``PermissionResolved`` (409) once it has one or ended,
    ``PermissionNotFound`` (404) for an id never asked there, ``InvalidPermissionAnswer`` (422)
    for an option it did not offer."""
    if permissions.is_waiting(request_id):
        asker = permissions.request(request_id).subagent_id
        if record.is_root or asker in descendants(await store.tree(record.root_id), record.id):
            return await permissions.answer(request_id, answer, answered_by=answered_by)
    entry = (await ledger_below(store, record)).entries.get(request_id)
    if entry is None:
        raise PermissionNotFound(request_id)
    if entry.resolution is not None:
        by = f" by {entry.resolution.answered_by}" if entry.resolution.answered_by else ""
        raise PermissionResolved(f"permission request {request_id!r} was already resolved: {entry.resolution.outcome}{by}")
    # Stored, unanswered, and nobody waits for it here: its run is gone without closing it.
    raise PermissionResolved(f"permission request {request_id!r} no longer waits: its run has stopped")
