"""Runs the store stopped: told truthfully, reconciled and resumed once it writes again.

A run whose write failed because of the database (it restarted, the disk filled, the file
became read-only) stops, and what it could not record (a closing observation, its final status)
is missing: its conversation is *stranded* here. As soon as the store writes again (its health
probe notices within about a second: ``store/health.py``), each stranded conversation is
reconciled on whichever replica owns it then (``Runtime.reconcile``, an ``@owned`` command):
its open calls are closed honestly, as after a restart (``recovery.py``), and its status becomes
``paused`` with ``status_reason`` saying the store stopped it. Unless
``OH_RESUME_AFTER_STORE_FAULT`` is off, or a person has acted on it since, it then runs again:
its model sees the closed calls and carries on; nothing already recorded runs twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Protocol

from ..errors import ConversationNotFound, ConversationRunning, StoreUnavailable, Unavailable

if TYPE_CHECKING:
    from ..store import Store

log = logging.getLogger(__name__)

RECONCILE_SECONDS = 1.0
"""How often stranded conversations are tried again while the store (or their owner) fails."""
STOPPED_BY_STORE = "stopped by the store, which could not write"
"""How a ``status_reason`` set here begins."""
FENCED = "its lease could not be renewed: the store cannot write"
"""Why a replica stops a run whose lease is about to lapse while the store fails (``ownership.py``):
the store's doing, so it resumes as if a write of its own had failed."""


def store_reason(detail: str) -> str:
    """The ``status_reason`` of a run the store stopped, with the store's own reason."""
    return f"{STOPPED_BY_STORE} ({detail})"


class Reconciling(Protocol):
    """What this needs of ``runtime.manager.Runtime`` (a protocol: no import cycle)."""

    store: Store

    async def reconcile(self, conversation_id: str, resume: bool, reason: str) -> None: ...


class StrandedRuns:
    """The conversations of one runtime whose run the store stopped, until reconciled."""

    def __init__(self, runtime: Reconciling, *, resume: bool) -> None:
        self._runtime = runtime
        self._resume = resume
        self._pending: dict[str, tuple[bool, str]] = {}  # root -> (resume it?, status_reason)
        self._marked: dict[str, str] = {}  # roots the next load here must reconcile -> reason
        self._recovered = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        runtime.store.health.on_recovered(self._recovered.set)

    def strand(self, root_id: str, detail: str, *, stopped_by_store: bool) -> None:
        """``root_id``'s run lost a write; ``detail``: the store's reason. ``stopped_by_store``:
        the run itself ended on the store's failure (so it resumes, if the setting says so),
        rather than ending otherwise while some write of its failed."""
        reason = store_reason(detail)
        self._marked[root_id] = reason
        resume = self._pending.get(root_id, (False, ""))[0] or (stopped_by_store and self._resume)
        self._pending[root_id] = (resume, reason)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._reconcile_forever(), name="reconcile stranded conversations")

    def mark(self, root_id: str, reason: str) -> None:
        """Make the next load of ``root_id`` here reconcile it (maybe another replica stranded it)."""
        self._marked.setdefault(root_id, reason)

    def marked(self, root_id: str) -> str | None:
        """The ``status_reason`` the next load of ``root_id`` must record, if it is stranded."""
        return self._marked.get(root_id)

    def reconciled(self, root_id: str) -> None:
        """``root_id`` was loaded and reconciled here."""
        self._marked.pop(root_id, None)

    def person_acted(self, root_id: str) -> None:
        """A person's command reached ``root_id``: what they asked for wins over resuming it."""
        if root_id in self._pending:
            self._pending[root_id] = (False, self._pending[root_id][1])

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _reconcile_forever(self) -> None:
        health = self._runtime.store.health
        while self._pending:
            if health.reason is not None:  # wait for the probe to see a write succeed
                self._recovered.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._recovered.wait(), RECONCILE_SECONDS)
                continue
            if not await self._reconcile_all():
                await asyncio.sleep(RECONCILE_SECONDS)

    async def _reconcile_all(self) -> bool:
        """One round; ``False`` when some conversation must wait for the next one."""
        resumed = []
        for root_id, (resume, reason) in list(self._pending.items()):
            try:
                await self._runtime.reconcile(root_id, resume, reason)
            except (StoreUnavailable, Unavailable) as exc:  # the store, or its owner, not yet
                log.debug("conversation %s is not reconciled yet: %s", root_id, exc.detail)
                return False
            except (ConversationNotFound, ConversationRunning):
                pass  # deleted, or someone ran it meanwhile
            except Exception:  # our bug: say so, and do not retry it forever
                log.exception("could not reconcile conversation %s", root_id)
            else:
                if resume:
                    resumed.append(root_id)
            self._pending.pop(root_id, None)
        if resumed:
            log.warning("the store writes again: resumed %d conversation(s) it had stopped: %s",
                        len(resumed), ", ".join(resumed))
        return True
