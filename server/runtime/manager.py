"""Runtime: creates, runs, steers and reports conversations.

It holds the live ``ConversationHost`` of each root that may run, and one ``TopicPublisher``
per tree. The API layer talks to this class only; backends talk to their host only. A root
whose run ended and that holds nothing the store does not (a native agent) is unloaded at
once; one that holds a peer's session, neither running nor used for ``OH_IDLE_UNLOAD_SECONDS``,
is unloaded then (its backend closed: the peer's process ends). Either loads again from the
store.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from ..bus import Bus
from ..errors import BadRequest, Conflict, ConversationNotFound, SubagentNotFound
from ..events import ConversationStateUpdateEvent, Event, MessageEvent
from taskwire_client.ids import new_id
from ..llm import ModelHTTP, ProviderGates
from .answering import PermissionCommands
from .backends import build_backend
from .budgets import check_budgets
from .conversation import ConversationHost
from .forwarding import TopicPublisher
from .ownership import Ownership, owned
from .recovery import close_interrupted_calls, restate_status
from .requests_first import RequestsFirst
from .runs import RunCommands
from .store_faults import STOPPED_BY_STORE, StrandedRuns
from .subagent_commands import SubagentCommands
from .task_manager import TaskManager
from .backends.openhands_process import OpenHandsProcess
from .workspaces import check_workspace_file_names, confine_workspace_files, prepare_workspace
from ..settings import Settings
from ..store import ConversationRecord, Store
from ..store.owned import settle

if TYPE_CHECKING:
    from ..hooks import Hooks

log = logging.getLogger(__name__)


class Runtime(PermissionCommands, SubagentCommands, RunCommands):
    """Every conversation this server runs or serves."""

    def __init__(self, settings: Settings, store: Store, bus: Bus, hooks: Hooks) -> None:
        self.settings = settings
        self.store = store
        self.bus = bus
        self.hooks = hooks
        self.tasks = TaskManager(settings, hooks, self.drive)
        self.requests_first = RequestsFirst()
        """The API's unanswered requests, which agent steps give way to."""
        self.llm_http = ModelHTTP()
        """The one HTTP client every native agent's model calls go through (closed by ``close``)."""
        self.llm_gates = ProviderGates()
        """Each model provider's shared rate-limit wait and concurrency cap on this server."""
        self.openhands = OpenHandsProcess(settings.openhands_python)
        """The one OpenHands process every ``kind: openhands`` conversation runs in (started at
        the first one's run, ended by ``close``)."""
        self._roots: dict[str, ConversationHost] = {}
        self._lock = asyncio.Lock()
        self._sweeper: asyncio.Task[None] | None = None
        self._stranded = StrandedRuns(self, resume=settings.resume_after_store_fault)
        self.ownership = Ownership(self)
        """Which replica runs each conversation (``@owned`` commands go there)."""
        self.tracing = False
        """Set when spans are exported: a run's log lines then carry its trace id."""
        self.takeovers = 0
        """Runs this process took over from the store, their owner gone (a lapsed lease, a restart)."""

    # -- lifecycle ------------------------------------------------------------------------

    async def recover(self) -> int:
        """At start-up on one machine (no shared store): conversations the store says are
        running were running in a process that is gone. Load each, which closes what it left
        open and marks it ``paused``. With replicas, a lapsed lease does this instead, when the
        conversation is next asked to run. Returns how many were recovered."""
        if self.ownership.shared:
            return 0
        recovered, page_id = [], None
        while True:
            page = await self.store.search_conversations(status="running", page_id=page_id)
            recovered.extend(record.id for record in page.items)
            page_id = page.next_page_id
            if page_id is None:
                break
        for conversation_id in recovered:
            await self.host(conversation_id)
        if recovered:
            log.warning("recovered %d conversation(s) interrupted by a previous stop", len(recovered))
        return len(recovered)

    def start(self) -> None:
        """Start unloading idle conversations (after ``recover``)."""
        if self.settings.idle_unload_seconds > 0:
            self._sweeper = asyncio.create_task(self._unload_idle(), name="unload idle conversations")

    async def _unload_idle(self) -> None:
        limit = self.settings.idle_unload_seconds
        while True:
            await asyncio.sleep(min(max(limit / 4, 0.05), 60))
            if self.ownership.shared:
                continue  # with leases, a conversation is given up as soon as it stops
            now = time.monotonic()
            for root_id, host in list(self._roots.items()):
                if not host.running and now - host.last_used >= limit:
                    try:
                        await self.unload(root_id)
                    except Exception:  # a backend that fails to close must not stop the sweep
                        log.exception("could not unload idle conversation %s", root_id)

    @property
    def loaded_count(self) -> int:
        """Root conversations held in memory."""
        return len(self._roots)

    async def close(self) -> None:
        """Stop every run (their status becomes ``paused``) and release backends."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
        await self._stranded.close()
        for host in list(self._roots.values()):
            await host.close()
        self._roots.clear()
        await self.ownership.close()
        await self.openhands.aclose()
        await self.llm_http.aclose()

    # -- conversations --------------------------------------------------------------------

    async def create(
        self,
        agent: dict[str, Any],
        *,
        workspace: str | None = None,
        initial_message: str | None = None,
        run: bool = True,
        conversation_id: str | None = None,
        confined: bool = True,
    ) -> ConversationRecord:
        """A new root conversation. ``conversation_id``: an id the client chose (a protocol
        whose client names the thread, as AG-UI's does); raises ``Conflict``
        (``conversation_exists``) when it is taken. ``workspace`` must lie under a workspace
        root (``workspaces.py``; ``InvalidWorkspace`` otherwise) unless ``confined`` is false."""
        if agent.get("kind") == "openhands" and not self.settings.openhands_python:
            raise BadRequest(
                "kind openhands needs the OpenHands interpreter: run `make openhands` in the taskwire checkout "
                "(it builds .venv-openhands, found without any setting), or set OH_OPENHANDS_PYTHON to a Python "
                "3.12 with openhands-sdk and openhands-tools 1.58.2 and taskwire-openhands installed",
                code="openhands_unavailable",
            )
        check_budgets(agent, self.settings)
        # Files the driver opens at the run's start: confined like every file a spec names.
        agent_files = list(agent.get("subagent_types") or []) if agent.get("kind") == "openhands" else []
        check_workspace_file_names(agent_files, "subagent_types file")
        conversation_id = conversation_id or new_id()
        folder = prepare_workspace(self.settings, workspace, conversation_id, confined=confined)
        confine_workspace_files(folder, agent_files, "subagent_types file")
        record = ConversationRecord(id=conversation_id, root_id=conversation_id, agent=agent, workspace=str(folder))
        try:
            await self.store.create_conversation(record)
        except ValueError as exc:  # the store's "id taken"
            raise Conflict(f"conversation {conversation_id!r} already exists", code="conversation_exists") from exc
        async with self.ownership.owning(conversation_id):
            # New: nothing to load or recover, and its stream is empty.
            host = self._roots[conversation_id] = self._host_of(record, 0)
            # Its first events are queued, not each waited for: the status change below (or
            # the flush) waits for them all at once, and nothing irrevocable comes between.
            await host.emit(ConversationStateUpdateEvent(key="status", value=record.status), wait=False)
            # A conversation works on a message: without one it stays idle whatever ``run`` says.
            if initial_message is not None:
                await host.emit(MessageEvent(role="user", source="user", content=initial_message), wait=False)
                host.deliver_user_message(initial_message)
                if run:
                    await self.run(conversation_id)
            await self.store.flush()
        return host.record

    def known_last_seq(self, root_id: str) -> int | None:
        """The highest ``seq`` of a tree loaded here, without asking the store (``None``: not
        loaded)."""
        host = self._roots.get(root_id)
        return None if host is None else host.last_seq

    async def get(self, conversation_id: str) -> ConversationRecord:
        record = await self.store.get_conversation(conversation_id)
        if record is None:
            raise ConversationNotFound(conversation_id)
        return record

    async def host(self, conversation_id: str) -> ConversationHost:
        """The live host of a root conversation, loading it (and recovering an interrupted run)."""
        host = self._roots.get(conversation_id)
        if host is not None:
            host.last_used = time.monotonic()
            return host
        async with self._lock:
            host = self._roots.get(conversation_id)
            if host is not None:
                return host
            record = await self.get(conversation_id)
            if not record.is_root:
                raise BadRequest(
                    f"{conversation_id!r} is a sub-agent; it runs under its parent {record.root_id!r}",
                    code="subagent_conversation",
                )
            host = self._host_of(record, await self.store.last_seq(record.root_id))
            stranded = self._stranded.marked(conversation_id)
            if record.status == "running" or stranded is not None:
                # Nothing runs it here (the process that ran it is gone, or its run lost writes
                # to a failing store): close its open calls honestly; if it was running, it is
                # paused. Whole, and before anyone is handed the host.
                if record.status == "running":
                    self.takeovers += 1
                await settle(self.store.own(self._recover(host, stranded)))
                self._stranded.reconciled(conversation_id)
            self._roots[conversation_id] = host
        return host

    def _host_of(self, record: ConversationRecord, last_seq: int) -> ConversationHost:
        publisher = TopicPublisher(
            self.bus, record.root_id, last_seq, self.hooks.event_subscribers, self.hooks.record_observers
        )
        return ConversationHost(
            record,
            store=self.store,
            settings=self.settings,
            publisher=publisher,
            sink=publisher.publish,
            backend_factory=lambda h: build_backend(
                h, self.store, self.tasks, self.hooks, self.requests_first, self.llm_http, self.llm_gates,
                self.openhands,
            ),
            new_stream=not last_seq,  # a tree with no event yet (just created): its host sees them all
        )

    async def _recover(self, host: ConversationHost, stranded: str | None) -> None:
        """``stranded``: the ``status_reason`` to record when the store stopped its run."""
        if stranded is None:
            await close_interrupted_calls(self.store, host)
        else:
            await close_interrupted_calls(self.store, host, "the store could not write")
        if host.record.status == "running":
            await host.set_status("paused", stranded)
        elif stranded is not None:
            await restate_status(self.store, host)

    def _strand(self, host: ConversationHost, *, stopped_by_store: str | None) -> None:
        """A write of ``host``'s run failed (the store could not write): what it could not
        record (a closing observation, its final status) is missing. Forget the host; once the
        store writes again it is reconciled, and maybe resumed (``store_faults.py``)."""
        if self._roots.get(host.conversation_id) is host:
            del self._roots[host.conversation_id]
        self._stranded.strand(host.conversation_id, stopped_by_store or self.store.health.reason or "a write failed",
                              stopped_by_store=stopped_by_store is not None)

    async def _run_ended(self, host: ConversationHost) -> None:
        """A root's run ended, its writes stored: release what it holds that the store holds
        too, at once, whatever ``OH_IDLE_UNLOAD_SECONDS`` says. One left holding nothing (a
        native agent) is unloaded: the next command loads it from the store, as with replicas
        (where ``Ownership`` gives it up). A peer's session stays for a follow-up until the
        idle unload."""
        await host.release_backend()
        if host.holds_nothing and not self.ownership.shared and self._roots.get(host.conversation_id) is host:
            del self._roots[host.conversation_id]
            await host.close()

    @owned
    async def reconcile(self, conversation_id: str, resume: bool, reason: str) -> None:
        """Reconcile a conversation whose run the store stopped (on the replica owning it):
        loading it closes what the run left open and records ``paused`` with the store's
        reason; then, if ``resume`` and nobody ran or paused it since, run it again."""
        if self.loaded(conversation_id) is None:
            self._stranded.mark(conversation_id, reason)
        host = await self.host(conversation_id)
        stopped_by_store = (host.record.status_reason or "").startswith(STOPPED_BY_STORE)
        if resume and stopped_by_store and host.record.status == "paused" and not host.running:
            log.info("conversation %s resumes after the store's fault", conversation_id)
            await self.run(conversation_id)

    def loaded(self, conversation_id: str) -> ConversationHost | None:
        """The host of a root this process holds in memory, if any."""
        return self._roots.get(conversation_id)

    async def unload(self, conversation_id: str, reason: str | None = None) -> None:
        """Stop and forget a root's host; the next command loads it again from the store.
        ``reason``: why its run is stopped, if not the usual."""
        host = self._roots.pop(conversation_id, None)
        if host is not None:
            await (host.close() if reason is None else host.close(reason))

    @owned
    async def delete(self, conversation_id: str) -> None:
        record = await self.get(conversation_id)
        if not record.is_root:
            raise BadRequest("delete the root conversation; sub-agents go with it", code="subagent_conversation")
        host = self._roots.pop(conversation_id, None)
        if host is not None:
            await host.close("the conversation was deleted")
        await self.store.delete_conversation(conversation_id)

    # -- running --------------------------------------------------------------------------

    @owned
    async def send_message(self, conversation_id: str, content: str, *, run: bool = True) -> None:
        """Record a user message and deliver it; start a run unless one is going (it picks it up)."""
        self._stranded.person_acted(conversation_id)
        host = await self.host(conversation_id)
        await host.emit(MessageEvent(role="user", source="user", content=content))
        host.deliver_user_message(content)
        if run and not host.running:
            await self.run(conversation_id)

    async def emit(self, conversation_id: str, event: Event, *, wait: bool = True) -> None:
        """Record and publish ``event`` in a conversation's stream, as a backend would
        (``wait``: see ``ConversationHost.emit``)."""
        root = await self.get(conversation_id)
        host = await self.host(root.root_id)
        target = host.find(conversation_id)
        if target is None:
            raise SubagentNotFound(conversation_id)
        await target.emit(event, wait=wait)

    async def full_state(self, conversation_id: str) -> dict[str, Any]:
        """The first frame of a socket: status, last seq, the sub-agent tree and the permission
        requests waiting in it."""
        record = await self.get(conversation_id)
        return {
            "id": record.id,
            "status": record.status,
            "status_reason": record.status_reason,
            "last_seq": await self.store.last_seq(record.root_id),
            "subagents": await self.subagents(conversation_id),
            "usage": record.usage.model_dump(),
            "tree_usage": (await self.tree_usage(record)).model_dump(),
            **await self.pending_state(record),
        }
