"""Group commit: concurrent appends become one transaction, shared by every store backend.

One writer task owns ``seq`` assignment. ``append`` queues the event and waits; the writer
takes everything queued (up to ``max_batch``), gives each event the next ``seq`` of its tree,
serializes it once, hands the batch to the backend's ``write`` (one transaction, durable on
return), then resolves the waiting appends in ``seq`` order. Futures resolved in that order
wake their tasks in that order, so a caller that publishes right after its await publishes
in ``seq`` order. ``submit`` is the same without the wait: its callback is scheduled on the
loop at the same point, so callbacks and woken callers run in one ``seq`` order. While one batch is being written (the database works in its own thread),
the next is numbered and serialized, and written as soon as the first commit is in. When
nothing is queued, the writer gives the backend a moment for deferred work (``idle_work``:
SQLite's text index), a short step at a time, so an append never waits long behind it.

``seq`` is numbered in this process, from a per-tree count read from the database once. A
backend where several processes append to one tree numbers inside its transaction instead,
by overriding ``GroupCommit._commit`` (see there).

If a batch fails (a duplicate event id, an event that does not serialize, a row another
process wrote), its events are retried one transaction each with ``seq`` re-read from the
database, so only the faulty event's append fails. If the database itself fails
(``StoreUnavailable``: a full disk, a lock held too long, a lost connection), the batch fails
as a whole, at once: retrying it event by event would only wait out the same fault again.

The writer task is the store's own: nobody cancels it, so a caller that stops waiting (it was
cancelled) never stops a write; its event is stored all the same, and its ``on_stored``
callback runs.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from ..errors import StoreUnavailable
from ..events import Event, EventRecord
from .rows import event_record


_YIELD_EVERY = 250

log = logging.getLogger(__name__)

OnStored = Callable[[EventRecord], None]
"""Called with the stored record of a ``submit``-ted event, in ``seq`` order."""


class BatchWriter(Protocol):
    """What a backend gives ``GroupCommit``."""

    async def last_seq(self, root_id: str) -> int:
        """The tree's highest stored ``seq`` (0 when empty)."""
        ...

    async def write(self, records: Sequence[EventRecord]) -> None:
        """Store ``records`` in one transaction, all or nothing, durable on return."""
        ...

    async def idle_work(self) -> bool:
        """Do a short step of deferred work (indexing) while no append is queued; whether
        more remains. Called between batches, never while one is being written."""
        ...


@dataclass(slots=True)
class _Append:
    conversation_id: str
    root_id: str
    event: Event
    future: asyncio.Future[EventRecord] | None
    """An ``append`` waits on it; a ``submit`` has ``on_stored`` instead."""
    seq_before: int | None
    on_stored: OnStored | None = None
    queued_at: float = 0.0
    """``time.perf_counter()`` when it was queued (for the append latency metric)."""


@dataclass(slots=True)
class _Written:
    """A batch whose transaction is in progress."""

    batch: list[_Append]
    records: list[EventRecord]
    task: asyncio.Future[None]


class GroupCommit:
    """Batches appends into transactions and assigns ``seq``; see the module docstring.

    After calling ``start``, ``append`` may be awaited from any task of the same loop;
    ``close`` writes what is queued, then stops.
    """

    def __init__(self, writer: BatchWriter, *, max_batch: int = 1000, max_trees: int = 10_000) -> None:
        self._writer = writer
        self._max_batch = max_batch
        self._room = asyncio.Event()  # set while fewer than max_batch appends are queued
        self._room.set()
        self._queued_count = 0
        self._settled_count = 0  # appends stored or failed; they settle in the order queued
        self._flushes: deque[tuple[int, asyncio.Future[None]]] = deque()
        # In-flight and prepared trees must stay cached (their seqs are not committed yet).
        self._max_trees = max(max_trees, 4 * max_batch)
        # The last seq given per tree, for the trees written lately (bounded: memory stays
        # flat however many trees there are; a forgotten tree is re-read from the database).
        self._last_seqs: OrderedDict[str, int] = OrderedDict()
        self._queue: deque[_Append] = deque()
        self._taken: list[_Append] = []
        self._inflight: _Written | None = None
        self._wakeup = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self._idle_failing = False
        self.observer: Callable[[float], None] | None = None
        """Called with the seconds each stored append took, from queued to stored (metrics)."""

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="event-writer")

    async def close(self) -> None:
        """Write every queued append, then stop the writer task."""
        self._closing = True
        self._wakeup.set()
        if self._task is not None:
            await self._task
            self._task = None

    async def append(
        self, conversation_id: str, root_id: str, event: Event, on_stored: OnStored | None = None
    ) -> EventRecord:
        """Queue ``event`` and wait until it is stored; see ``EventStore.append``.

        Once queued, the event is written (and ``on_stored`` called) even if the caller stops
        waiting.
        """
        future: asyncio.Future[EventRecord] = asyncio.get_running_loop().create_future()
        self._enqueue(_Append(conversation_id, root_id, event, future, event.seq, on_stored))
        return await future

    def submit(self, conversation_id: str, root_id: str, event: Event, on_stored: OnStored) -> None:
        """Queue ``event`` without waiting; see ``EventStore.submit``."""
        self._enqueue(_Append(conversation_id, root_id, event, None, event.seq, on_stored))

    async def room(self) -> None:
        """Return once fewer than ``max_batch`` appends wait to be written."""
        await self._room.wait()

    async def flush(self) -> None:
        """Return once every append queued so far is stored (or has failed)."""
        if self._settled_count >= self._queued_count:
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._flushes.append((self._queued_count, done))
        await done

    def _enqueue(self, item: _Append) -> None:
        if item.event.ephemeral:
            raise ValueError(f"{item.event.kind} is ephemeral: it is published, never stored")
        if self._closing or self._task is None or self._task.done():
            raise RuntimeError("the event store is not open")
        item.queued_at = time.perf_counter()
        self._queue.append(item)
        self._queued_count += 1
        self._wakeup.set()
        if len(self._queue) >= self._max_batch:
            self._room.clear()

    def forget(self, root_id: str) -> None:
        """Drop the cached ``seq`` of a tree whose events were deleted."""
        self._last_seqs.pop(root_id, None)

    def new_tree(self, root_id: str) -> None:
        """A tree that has just been created holds no event yet: its first append is numbered
        without reading the database (a burst of new conversations made one read each)."""
        if root_id not in self._last_seqs:
            self._remember(root_id, 0)

    async def _run(self) -> None:
        try:
            while True:
                if not self._queue:
                    await self._flush()
                    if self._closing:
                        return
                    if await self._idle_work():
                        continue  # look at the queue again before the next step
                    await self._wakeup.wait()
                    self._wakeup.clear()
                    continue
                count = min(len(self._queue), self._max_batch)
                self._taken = [self._queue.popleft() for _ in range(count)]
                if len(self._queue) < self._max_batch:
                    self._room.set()
                await self._commit(self._taken)
                self._taken = []
        finally:
            # Only reached early on a bug or a cancelled loop: never leave an append waiting.
            stopped = RuntimeError("the event writer stopped")
            inflight = self._inflight.batch if self._inflight else []
            for item in [*inflight, *self._taken, *self._queue]:
                self._fail(item, stopped)
            self._queue.clear()
            self._room.set()

    async def _idle_work(self) -> bool:
        try:
            more = await self._writer.idle_work()
        except Exception as exc:  # tried again after the next batch; the appends go on
            if not self._idle_failing:
                log.warning("deferred store work failed (tried again later): %r", exc)
            self._idle_failing = True
            return False
        self._idle_failing = False
        return more

    async def _commit(self, batch: list[_Append]) -> None:
        """Store ``batch`` and resolve its appends, in ``seq`` order after earlier batches.

        Pipelined: ``batch`` is numbered and serialized while the previous batch is being
        written (the database works in its own thread), and its write starts once that
        commit is in; ``_flush`` waits for the last one. A backend whose ``seq`` comes from
        the database (several processes appending to one tree) overrides this to number and
        write one batch in one transaction, and ``_commit_one_by_one`` likewise.
        """
        records = await self._prepare(batch)
        if not await self._flush() and records is not None:
            # Numbered after a batch that failed: number it again.
            self._unprepare(batch)
            records = await self._prepare(batch)
        if records is None:
            await self._commit_one_by_one(batch)
            return
        self._inflight = _Written(batch, records, asyncio.ensure_future(self._writer.write(records)))

    async def _flush(self) -> bool:
        """Wait for the batch being written and resolve its appends (retrying them one by one
        if it failed). Whether it was stored as one batch."""
        written = self._inflight
        if written is None:
            return True
        try:
            await written.task
        except StoreUnavailable as exc:
            self._unprepare(written.batch)
            self._fail_all(written.batch, exc)
            return False
        except Exception:
            self._unprepare(written.batch)
            await self._commit_one_by_one(written.batch)
            return False
        finally:
            self._inflight = None
        for item, record in zip(written.batch, written.records):
            self._resolve(item, record)
        return True

    async def _prepare(self, batch: list[_Append]) -> list[EventRecord] | None:
        """Number and serialize ``batch``; ``None`` (and nothing numbered) if that fails."""
        try:
            records = []
            for count, item in enumerate(batch, start=1):
                if count % _YIELD_EVERY == 0:
                    await asyncio.sleep(0)  # a big batch must not hold the loop for long
                seq = self._last_seqs.get(item.root_id)
                if seq is None:
                    seq = await self._writer.last_seq(item.root_id)
                item.event.seq = seq + 1
                self._remember(item.root_id, seq + 1)
                records.append(event_record(item.conversation_id, item.root_id, item.event))
            return records
        except Exception:
            self._unprepare(batch)
            return None

    def _unprepare(self, batch: list[_Append]) -> None:
        for item in batch:
            item.event.seq = item.seq_before
            self.forget(item.root_id)

    async def _commit_one_by_one(self, batch: list[_Append]) -> None:
        for n, item in enumerate(batch):
            try:
                item.event.seq = await self._writer.last_seq(item.root_id) + 1
                record = event_record(item.conversation_id, item.root_id, item.event)
                await self._writer.write([record])
            except StoreUnavailable as exc:
                item.event.seq = item.seq_before
                self._fail_all(batch[n:], exc)
                return
            except Exception as exc:
                item.event.seq = item.seq_before
                self._fail(item, exc)
            else:
                self._remember(item.root_id, item.event.seq)
                self._resolve(item, record)

    def _resolve(self, item: _Append, record: EventRecord) -> None:
        """Hand ``record`` to whoever queued ``item``: its callback (scheduled, not called, so
        that callbacks and woken callers run in the order they were resolved), then its
        waiting caller, if it still waits."""
        if item.on_stored is not None:
            asyncio.get_running_loop().call_soon(item.on_stored, record)
        if item.future is not None and not item.future.done():
            item.future.set_result(record)
        if self.observer is not None:
            self.observer(time.perf_counter() - item.queued_at)
        self._settled()

    def _fail(self, item: _Append, exc: BaseException, *, logged: bool = False) -> None:
        """Tell whoever queued ``item`` that it was not stored; nobody waits on a submitted
        event, so that failure is logged (unless ``logged`` already)."""
        if item.future is None:
            if not logged:
                log.error("a %s of conversation %s was not stored", item.event.kind, item.conversation_id, exc_info=exc)
        elif not item.future.done():
            item.future.set_exception(exc)
        self._settled()

    def _fail_all(self, items: Sequence[_Append], exc: StoreUnavailable) -> None:
        """The database failed under ``items``: fail them all, logging the submitted ones once."""
        submitted = sum(1 for item in items if item.future is None)
        if submitted:
            log.warning("%d submitted event(s) were not stored: %s", submitted, exc.detail)
        for item in items:
            self._fail(item, exc, logged=True)

    def _settled(self) -> None:
        self._settled_count += 1
        while self._flushes and self._flushes[0][0] <= self._settled_count:
            _, done = self._flushes.popleft()
            if not done.done():
                done.set_result(None)

    def _remember(self, root_id: str, seq: int) -> None:
        self._last_seqs[root_id] = seq
        self._last_seqs.move_to_end(root_id)
        while len(self._last_seqs) > self._max_trees:
            self._last_seqs.popitem(last=False)
