"""Ownership: a command on a conversation runs on the replica that owns it.

With several replicas (PostgreSQL store), the replica that starts a conversation or is asked to
run it takes a lease on it (``store/leases.py``) and renews it while it holds the
conversation; a conversation that is not running is owned by nobody. A command that reaches
another replica (a message, run, pause, interrupt, cancelling a sub-agent, answering a
permission request, delete) goes to the owner over the bus and its result or error comes back.
If the owner died, its lease lapses (``OH_LEASE_SECONDS``) and the next replica asked takes the
conversation over from its stored events: ``Runtime.host`` closes the calls the dead replica
left open as ``failed`` (and the permission requests they waited on as ``cancelled``) and the
model's history is rebuilt from the stream. Until the lease lapses, such commands answer 503.

What this process holds in memory of a conversation is only trusted while it holds the lease:
a host is unloaded when the lease is given up, and dropped if one was loaded without it. A
replica that cannot renew a lease in time stops the run itself, before another may take over.

With SQLite (one machine) there are no leases: every command runs here, unchanged.

How ``Runtime`` uses it: ``@owned`` on its command methods, ``async with
ownership.owning(id)`` around what ``create`` does, ``ownership.close()`` in its ``close``;
and it gives ownership ``loaded(root_id)`` and ``unload(root_id)``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
import time
from collections import defaultdict
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Awaitable, Callable, Coroutine, Protocol, TypeVar

from ..bus import Bus
from ..errors import BadRequest, StoreUnavailable, Unavailable
from ..settings import Settings
from ..store import ConversationRecord, Store
from .store_faults import FENCED
from ..store.leases import leases_for


class Runtime(Protocol):
    """What ownership needs of ``runtime.manager.Runtime`` (a protocol: no import cycle)."""

    settings: Settings
    store: Store
    bus: Bus
    ownership: Ownership

    async def get(self, conversation_id: str) -> ConversationRecord: ...

    def loaded(self, conversation_id: str) -> Any: ...

    async def unload(self, conversation_id: str, reason: str | None = None) -> None: ...

log = logging.getLogger(__name__)

COMMAND_TIMEOUT = 30.0
"""Seconds a command forwarded to the owner may take to answer."""
MAX_HOPS = 3
"""Forwards one command may take while ownership changes hands, before giving up."""

Method = TypeVar("Method", bound=Callable[..., Awaitable[Any]])


def owned(method: Method) -> Method:
    """Mark a ``Runtime`` method as a command on one conversation (its first argument, a root
    or a sub-agent): called on any replica, it runs on the one that owns the conversation.
    Its other arguments and its result must be JSON-able (they may cross the bus)."""

    @functools.wraps(method)
    async def on_owner(runtime: Runtime, conversation_id: str, *args: Any, **kwargs: Any) -> Any:
        return await runtime.ownership.call(conversation_id, method.__name__, list(args), kwargs)

    on_owner.run_here = method  # type: ignore[attr-defined]
    return on_owner  # type: ignore[return-value]


def default_replica_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class Ownership:
    """Routes ``@owned`` commands of one ``Runtime``; see the module docstring."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self.replica_id = runtime.settings.replica_id or default_replica_id()
        """This replica's name in leases and on the bus."""
        self._seconds = runtime.settings.lease_seconds
        self._leases = leases_for(runtime.store)
        self._held: dict[str, float] = {}  # root -> when its lease was last confirmed (monotonic)
        self._locks: dict[str, asyncio.Lock] = {}
        self._lock_users: defaultdict[str, int] = defaultdict(int)
        self._active: defaultdict[str, int] = defaultdict(int)  # commands at work here, per root
        self._watched: set[str] = set()  # roots whose run task will settle them when it ends
        self._tasks: set[asyncio.Task[Any]] = set()
        self._start_lock = asyncio.Lock()
        self._started = False
        self._closed = False

    @property
    def shared(self) -> bool:
        """True when replicas share the store, and so ownership matters."""
        return self._leases is not None

    @property
    def lease_count(self) -> int:
        """Leases this replica holds now (none with one machine: nothing is leased)."""
        return len(self._held)

    def holds(self, root_id: str) -> bool:
        """Whether this replica holds the lease of ``root_id`` (always, with one machine)."""
        return self._leases is None or root_id in self._held

    # -- commands -----------------------------------------------------------------------------

    async def call(
        self, conversation_id: str, name: str, args: list[Any], kwargs: dict[str, Any], *, hops: int = 0
    ) -> Any:
        """Run command ``name`` where ``conversation_id`` is owned: here (taking the lease if
        nobody holds it) or on its owner over the bus."""
        if self._leases is None:
            return await self._run_here(conversation_id, name, args, kwargs)
        await self._start()
        root_id = (await self._runtime.get(conversation_id)).root_id
        owner, left = await self._take(root_id)
        if owner == self.replica_id:
            async with self._working(root_id):
                return await self._run_here(conversation_id, name, args, kwargs)
        if hops >= MAX_HOPS:
            raise Unavailable(f"conversation {root_id!r} is changing hands; try again", code="owner_moving", retry_after=1)
        command = {"conversation_id": conversation_id, "name": name, "args": args, "kwargs": kwargs, "hops": hops + 1}
        try:
            return await self._runtime.bus.send_command(owner, command, timeout=COMMAND_TIMEOUT)
        except Unavailable as exc:
            if exc.code != "replica_unreachable":
                raise
            raise Unavailable(
                f"conversation {root_id!r} is run by replica {owner!r}, which does not answer "
                f"({exc.detail}); another replica can take it over when its lease lapses, "
                f"in {left:.1f} s",
                code="owner_unreachable",
                retry_after=left,
            ) from exc

    @asynccontextmanager
    async def owning(self, root_id: str) -> AsyncIterator[None]:
        """Hold the lease of a conversation this replica is creating while the block runs:
        the replica that starts a conversation owns it, and commands inside run here."""
        if self._leases is None:
            yield
            return
        await self._start()
        owner, _ = await self._take(root_id)
        if owner != self.replica_id:  # a new id: only a clash of uuids could get here
            raise Unavailable(f"conversation {root_id!r} is already held by {owner!r}", code="owner_moving")
        async with self._working(root_id):
            yield

    async def _on_command(self, command: dict[str, Any]) -> Any:
        """A command another replica forwarded here, believing this one the owner."""
        return await self.call(
            str(command["conversation_id"]), str(command["name"]), list(command.get("args") or []),
            dict(command.get("kwargs") or {}), hops=int(command.get("hops", MAX_HOPS)),
        )

    async def _run_here(self, conversation_id: str, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        method = getattr(getattr(type(self._runtime), name, None), "run_here", None)
        if method is None:  # only @owned methods are commands, whatever a message names
            raise BadRequest(f"{name!r} is not a conversation command", code="unknown_command")
        return await method(self._runtime, conversation_id, *args, **kwargs)

    # -- leases -------------------------------------------------------------------------------

    async def _take(self, root_id: str) -> tuple[str, float]:
        """Take or renew the lease of ``root_id``; returns its holder and the seconds it has."""
        assert self._leases is not None
        async with self._locked(root_id):
            owner, left = await self._leases.acquire(root_id, self.replica_id, self._seconds)
            if owner == self.replica_id:
                if root_id not in self._held:
                    # Another replica may have run it since this one last held it.
                    await self._runtime.unload(root_id)
                self._held[root_id] = time.monotonic()
            elif self._held.pop(root_id, None) is not None:
                log.error("replica %s lost conversation %s to %s", self.replica_id, root_id, owner)
                await self._runtime.unload(root_id)
            return owner, left

    @asynccontextmanager
    async def _working(self, root_id: str) -> AsyncIterator[None]:
        self._active[root_id] += 1
        try:
            yield
        finally:
            self._active[root_id] -= 1
            if not self._active[root_id]:
                del self._active[root_id]
            await self._settle(root_id)

    @asynccontextmanager
    async def _locked(self, root_id: str) -> AsyncIterator[None]:
        """One lease decision at a time per conversation; the lock lives while it is used."""
        self._lock_users[root_id] += 1
        try:
            async with self._locks.setdefault(root_id, asyncio.Lock()):
                yield
        finally:
            self._lock_users[root_id] -= 1
            if not self._lock_users[root_id]:
                del self._lock_users[root_id]
                self._locks.pop(root_id, None)

    async def _settle(self, root_id: str) -> None:
        """Keep the lease while the conversation runs here; once it does not, give it up."""
        async with self._locked(root_id):
            if self._active.get(root_id):
                return  # the last command at work settles it
            host = self._runtime.loaded(root_id)
            if host is not None and host.running and host.task is not None:
                if root_id not in self._watched:
                    self._watched.add(root_id)
                    host.task.add_done_callback(lambda _: self._spawn(self._after_run(root_id)))
                return
            try:
                await self._runtime.unload(root_id)
                if self._held.pop(root_id, None) is not None and self._leases is not None:
                    await self._leases.release(root_id, self.replica_id)
            except StoreUnavailable as exc:  # the store's fault is told by the store: its lease lapses
                log.debug("replica %s could not give conversation %s up: %s", self.replica_id, root_id, exc.reason)
            except Exception as exc:  # the command itself succeeded; an unreleased lease lapses
                log.warning("replica %s could not give conversation %s up: %r", self.replica_id, root_id, exc)

    async def _after_run(self, root_id: str) -> None:
        self._watched.discard(root_id)
        await self._settle(root_id)

    async def _renew_forever(self) -> None:
        assert self._leases is not None
        while True:
            await asyncio.sleep(self._seconds / 3)
            held = list(self._held)
            if not held:
                continue
            try:
                kept: set[str] | None = await self._leases.renew(self.replica_id, held, self._seconds)
            except StoreUnavailable as exc:  # told by the store once: retry, and fence in time
                log.debug("replica %s could not renew its leases: %s", self.replica_id, exc.reason)
                kept = None
            except Exception as exc:  # the database is unreachable: retry, and fence in time
                log.warning("replica %s could not renew its leases: %r", self.replica_id, exc)
                kept = None
            now = time.monotonic()
            for root_id in held:
                if root_id not in self._held:
                    continue
                if kept is not None and root_id in kept:
                    self._held[root_id] = now
                elif kept is not None or now - self._held[root_id] > 0.8 * self._seconds:
                    # Lost, or about to lapse: stop before another replica may take it over.
                    # Lost: another replica took it (an error); about to lapse: the store's fault, told by it.
                    log.log(logging.ERROR if kept is not None else logging.WARNING,
                            "replica %s stops conversation %s: its lease is %s", self.replica_id, root_id,
                            "gone" if kept is not None else "about to lapse while the store cannot write")
                    self._held.pop(root_id, None)
                    try:
                        await self._runtime.unload(root_id, FENCED if kept is None else None)
                    except Exception:
                        log.exception("replica %s could not stop conversation %s", self.replica_id, root_id)

    # -- lifecycle ----------------------------------------------------------------------------

    async def _start(self) -> None:
        # On first use: a replica gets commands only for conversations it holds, and it holds
        # one only after getting here.
        async with self._start_lock:
            if self._started:
                return
            await self._runtime.bus.set_command_handler(self.replica_id, self._on_command)
            self._spawn(self._renew_forever())
            self._started = True

    async def close(self) -> None:
        """Stop renewing and give every lease up, so other replicas can take over at once.
        Call after the runtime has stopped its runs."""
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._leases is not None and self._held:
            try:
                await self._leases.release_all(self.replica_id)
            except Exception as exc:  # they lapse on their own
                log.warning("replica %s could not release its leases: %r", self.replica_id, exc)
        self._held.clear()

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        if self._closed:
            coro.close()
            return
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
