"""``RecordTracer``: spans from stored records, exported over OTLP/HTTP, off the agent's path.

On when an OTLP endpoint is configured (``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) unless ``OH_TRACING=false``; ``OH_TRACING=true``
forces it on (the SDK's default endpoint, ``http://localhost:4318``).

``offer`` (a record observer) only queues: a bounded queue, whose overflow is counted. A task
ships the queued records in batches to the tracing worker, a process of its own that builds
the spans and exports them (``trace_worker.py``: encoding spans would otherwise hold this
process's interpreter lock). What the worker could not build or export is counted too.
"""

from __future__ import annotations

import asyncio
import logging
import os
import struct
import sys
import time
from collections import deque
from typing import Any, Mapping

from ..child_processes import OWN_GROUP
from ..environment import peer_environment
from ..events import EventRecord
from ..settings import Settings
from . import trace_worker
from .span_builder import KINDS

log = logging.getLogger(__name__)

CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
STOP_TIMEOUT = 30.0
"""Seconds the worker gets at shutdown to end and export the spans still open."""
_LENGTH = struct.Struct(">I")


def tracing_enabled(settings: Settings, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether this server exports spans (see the module docstring)."""
    if settings.tracing is not None:
        return settings.tracing
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return any(environ.get(name) for name in ENDPOINTS)


class WorkerGone(Exception):
    """The tracing worker process ended or stopped answering."""


class RecordTracer:
    """Queues records for the tracing worker and ships them; see the module docstring.

    ``start`` it in the server's loop; ``stop`` ships what is queued, has the worker end the
    spans still open and export them, then ends the worker.
    """

    def __init__(
        self,
        settings: Settings,
        replica_id: str,
        environ: Mapping[str, str] = os.environ,
        *,
        queue_size: int = 100_000,
        batch_size: int = 5_000,
        interval: float = 0.25,
    ) -> None:
        capture = environ.get(CAPTURE_CONTENT, "").strip().lower() == "true"
        self._kinds = KINDS | {"MessageEvent"} if capture else KINDS
        otel = {k: v for k, v in environ.items() if k.startswith("OTEL_")}
        self._config = (capture, replica_id, otel, settings.log_format, settings.log_level)
        self._records: deque[EventRecord] = deque()
        self._queue_size = queue_size
        self._batch_size = batch_size
        self._interval = interval
        self._wakeup = asyncio.Event()
        self._closing = False
        self._process: asyncio.subprocess.Process | None = None
        self._task: asyncio.Task[None] | None = None
        self._before = (0, 0, 0)
        self._open_spans = 0
        self.records_dropped = 0
        """Records not traced: the queue was full, or the worker died with them."""
        self.spans_exported = 0
        self.spans_failed = 0
        """Spans the exporter did not take (the collector down, refusing, or too slow)."""
        self.spans_not_built = 0
        """Spans the worker did not build (too many open at once)."""

    @property
    def spans_dropped(self) -> int:
        """Spans not built or not exported."""
        return self.spans_not_built + self.spans_failed

    # -- the record observer ---------------------------------------------------------------

    def offer(self, record: EventRecord) -> None:
        """Queue a stored record for tracing; never blocks, drops (and counts) when full."""
        if record.kind not in self._kinds:
            return
        if len(self._records) >= self._queue_size:
            self.records_dropped += 1
            return
        self._records.append(record)
        if not self._wakeup.is_set():
            self._wakeup.set()

    # -- the task --------------------------------------------------------------------------

    async def start(self) -> None:
        await self._spawn()
        self._task = asyncio.create_task(self._ship_forever(), name="record tracer")

    async def stop(self) -> None:
        """Ship what is queued, end what is still open, export it all, then stop the worker."""
        if self._task is None:
            return
        self._closing = True
        self._wakeup.set()
        await self._task
        self._task = None
        try:
            async with asyncio.timeout(STOP_TIMEOUT):
                self._update(await self._call("finish", time.time_ns()))
                assert self._process is not None
                await self._process.wait()
        except (WorkerGone, TimeoutError) as exc:
            why = "was gone" if isinstance(exc, WorkerGone) else f"did not finish within {STOP_TIMEOUT:g} s"
            log.error("tracing: the tracing worker %s at shutdown; %d open spans are lost", why, self._open_spans)
        finally:
            self._end_worker()

    async def _ship_forever(self) -> None:
        while True:
            await self._wakeup.wait()
            if not self._closing:
                await asyncio.sleep(self._interval)  # let a batch gather
            self._wakeup.clear()
            while self._records:
                await self._ship()
            if self._closing:
                return

    async def _ship(self) -> None:
        records = self._records
        rows = [trace_worker.row_of(records.popleft()) for _ in range(min(self._batch_size, len(records)))]
        try:
            self._update(await self._call("trace", rows))
        except WorkerGone:
            # Its open spans died with it; a new worker traces the runs that start from now.
            log.error("tracing: the tracing worker died; %d open spans and %d records not traced are lost; starting another",
                      self._open_spans, len(rows))
            self.records_dropped += len(rows)
            self._before = (self.spans_exported, self.spans_failed, self.spans_not_built)
            self._end_worker()
            await self._spawn()

    # -- the worker process ----------------------------------------------------------------

    async def _spawn(self) -> None:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", f"{__package__}.trace_worker",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            env=peer_environment({}),  # never an OH_* setting (server/environment.py)
            **OWN_GROUP,  # a stop signalled to our group reaches us only; stop() ends it in order
        )
        assert self._process.stdin is not None
        self._process.stdin.write(trace_worker.frame(self._config))

    async def _call(self, op: str, payload: Any) -> trace_worker.Stats:
        """Send one request to the worker and read its answer. A cancelled call leaves the
        protocol half way: the worker is ended, and the next call starts another."""
        process = self._process
        if process is None or process.stdin is None or process.stdout is None:
            raise WorkerGone("no tracing worker")
        try:
            process.stdin.write(trace_worker.frame((op, payload)))
            await process.stdin.drain()
            (size,) = _LENGTH.unpack(await process.stdout.readexactly(_LENGTH.size))
            return trace_worker.decode(await process.stdout.readexactly(size))
        except (OSError, RuntimeError, asyncio.IncompleteReadError) as exc:  # RuntimeError: its pipe closed
            raise WorkerGone(f"the tracing worker is gone: {exc!r}") from exc
        except asyncio.CancelledError:
            self._end_worker()
            raise

    def _end_worker(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            process.kill()

    def _update(self, stats: trace_worker.Stats) -> None:
        """Take the worker's counts (its own since it started, over those of workers before it)."""
        exported, failed, not_built = self._before
        self._open_spans = stats[3]
        self.spans_exported, self.spans_failed, self.spans_not_built = exported + stats[0], failed + stats[1], not_built + stats[2]
