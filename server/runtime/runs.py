"""The runtime's runs: starting one, driving a backend to its end, pausing, interrupting.

A mixin of ``runtime.manager.Runtime`` (as ``answering.py`` and ``subagent_commands.py`` are).
``drive`` is the one place a run's status is recorded: ``running`` first, and whatever ends
the run, cancellation included, its final status last. A sub-agent's run is driven by the
same method (``TaskManager`` is handed it).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from ..errors import BackendError, ConversationRunning, StoreUnavailable
from ..events import AgentErrorEvent
from .budgets import BudgetExceeded
from .ownership import owned
from .requests_first import RequestsFirst
from .store_faults import FENCED, StrandedRuns, store_reason
from ..store import ConversationRecord, Store
from ..telemetry import logcontext
from ..telemetry.ids import trace_id_hex, trace_id_of

if TYPE_CHECKING:
    from .conversation import ConversationHost

log = logging.getLogger(__name__)


class RunCommands:
    """``Runtime``'s runs (``store``, ``host``, ``requests_first`` and the stranded runs are the
    runtime's)."""

    store: Store
    requests_first: RequestsFirst
    tracing: bool
    _stranded: StrandedRuns

    async def host(self, conversation_id: str) -> ConversationHost:
        raise NotImplementedError

    def _strand(self, host: ConversationHost, *, stopped_by_store: str | None) -> None:
        raise NotImplementedError

    async def _run_ended(self, host: ConversationHost) -> None:
        raise NotImplementedError

    @owned
    async def run(self, conversation_id: str) -> None:
        host = await self.host(conversation_id)
        if host.running:
            raise ConversationRunning(conversation_id)
        started = asyncio.Event()
        host.task = asyncio.create_task(self._run_root(host, started), name=f"run {conversation_id}")
        # Return once `running` is recorded, so a client that reads the status next sees this run.
        waiter = asyncio.create_task(started.wait())
        try:
            await asyncio.wait({waiter, host.task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()

    async def _run_root(self, host: ConversationHost, started: asyncio.Event) -> None:
        failures = self.store.health.failures
        stopped_by_store: str | None = None
        try:
            await self.drive(host, started)
        except BackendError:
            pass  # recorded in the stream by drive()
        except asyncio.CancelledError as exc:
            if exc.args[:1] == (FENCED,):  # its lease lapsing while the store fails: the store's doing
                stopped_by_store = self.store.health.reason or FENCED
            raise
        except StoreUnavailable as exc:
            stopped_by_store = exc.reason
            log.warning("conversation %s stopped: the store cannot write (%s)", host.conversation_id, exc.reason)
        finally:
            if self.store.health.failures != failures:  # some write failed meanwhile, maybe ours
                self._strand(host, stopped_by_store=stopped_by_store)
                await host.close()
            else:  # still this task's: no other run of this host starts meanwhile
                await self._run_ended(host)

    async def drive(self, host: ConversationHost, started: asyncio.Event | None = None) -> str | None:
        """Run ``host``'s backend once, recording status changes and failures in its stream.
        Raises ``BackendError`` (already recorded) so a parent can report its sub-agent's failure.

        Whatever ends the run, cancellation included, and wherever it lands, the last thing
        recorded is its final status (``finished``, ``paused``, ``error``)."""
        host.clear_pause()
        host.close_inbox(is_open=True)
        if not host.is_subagent:
            host.budget_stop = None  # a new run of a root: its budgets are checked afresh
        outcome = "paused"  # a run cut short (interrupted, cancelled, stopped by a budget) ends paused
        reason = None
        try:
            status_event_id = await host.set_status("running")
            host.start_clock()
            self._bind_log_context(host, status_event_id)
            log.info("run started")
            if started is not None:
                started.set()
            # Building the backend and its first model call are a step's CPU too: the request
            # that started this run (and any other unanswered one) is answered first.
            await self.requests_first.step()
            backend = await host.backend()
            answer = await backend.run(host)
            host.close_inbox()  # at once: a message sent from now on is refused, not left unread
            outcome = "paused" if host.pause_requested and answer is None else "finished"
            return answer
        except asyncio.CancelledError:
            raise
        except BudgetExceeded:
            raise  # paused, saying which budget (below); a parent's task call reports it
        except StoreUnavailable as exc:  # not the run's fault: paused, saying why, until it resumes
            reason = store_reason(exc.reason)
            raise
        except BackendError as exc:
            outcome = "error"
            await host.emit(AgentErrorEvent(error=exc.detail, code=exc.code))
            log.warning("run failed: %s (%s)", exc.detail, exc.code)
            raise
        except Exception as exc:  # our bug: keep serving, record it, log the traceback
            outcome = "error"
            log.exception("conversation %s failed", host.conversation_id)
            await host.emit(AgentErrorEvent(error=f"internal error: {exc!r}", code="internal_error"))
            raise BackendError(f"internal error: {exc!r}", code="internal_error") from exc
        finally:
            host.close_inbox()
            host.stop_clock()
            if host.budget_stop is not None:
                reason = host.budget_stop.describe()
            await host.set_status(outcome, reason)
            log.info("run ended: %s", outcome)

    def _bind_log_context(self, host: ConversationHost, status_event_id: str | None) -> None:
        """Name this run in the log lines of its task and the tasks it starts (its sub-agents
        inherit the root's trace id). The trace id is the one its spans get (see
        ``server/telemetry/ids.py``), given only when spans are exported."""
        if host.is_subagent:
            logcontext.bind(conversation_id=host.root_id, subagent_id=host.conversation_id)
            return
        trace_id = trace_id_hex(trace_id_of(status_event_id)) if self.tracing and status_event_id else None
        logcontext.bind(conversation_id=host.conversation_id, subagent_id=None, trace_id=trace_id)

    @owned
    async def pause(self, conversation_id: str) -> None:
        """Stop at the next safe point (before the next model call)."""
        self._stranded.person_acted(conversation_id)
        (await self.host(conversation_id)).request_pause()

    @owned
    async def interrupt(self, conversation_id: str) -> None:
        """Stop now: running tools are cancelled and closed (``failed`` / ``cancelled``)."""
        self._stranded.person_acted(conversation_id)
        host = await self.host(conversation_id)
        if host.task is not None and not host.task.done():
            host.task.cancel("the run was interrupted")
            # wait, not gather: this caller cancelled must not cancel the run's clean-up too
            await asyncio.wait({host.task})

    async def wait(self, conversation_id: str, timeout: float | None = None) -> ConversationRecord:
        """Wait for the current run to end; returns the record."""
        host = await self.host(conversation_id)
        if host.task is not None:
            await asyncio.wait_for(asyncio.shield(host.task), timeout)
        return host.record
