"""``RecordTracer``: spans from stored records, exported over OTLP/HTTP, off the agent's path.

On when an OTLP endpoint is configured (``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) unless ``OH_TRACING=false``; ``OH_TRACING=true``
forces it on (the SDK's default endpoint, ``http://localhost:4318``). The exporter reads the
standard ``OTEL_EXPORTER_OTLP_*`` variables (headers, timeout, compression, certificates) and
the resource ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES``.

``offer`` (a record observer) only queues: a bounded queue, whose overflow is counted. A task
feeds the queued records to the ``SpanBuilder`` in batches and exports the spans that ended,
in a worker thread (the SDK's exporter blocks); spans it could not export are counted.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from typing import Mapping

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

import server
from server.events import EventRecord
from server.settings import Settings
from server.telemetry.span_builder import SpanBuilder
from server.telemetry.spans import SpanData

log = logging.getLogger(__name__)

CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_SCOPE = InstrumentationScope("taskwire", server.__version__)


def tracing_enabled(settings: Settings, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether this server exports spans (see the module docstring)."""
    if settings.tracing is not None:
        return settings.tracing
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return any(environ.get(name) for name in ENDPOINTS)


def resource_for(replica_id: str) -> Resource:
    """The resource of every span: the environment's (``OTEL_SERVICE_NAME``,
    ``OTEL_RESOURCE_ATTRIBUTES``) over taskwire's version and replica id; ``service.name`` is
    ``taskwire`` unless the environment names it."""
    ours = Resource({"service.version": server.__version__, "service.instance.id": replica_id})
    resource = ours.merge(Resource.create({}))  # the argument of merge wins
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "taskwire"}))
    return resource


class RecordTracer:
    """Builds spans from the records ``offer`` is given and exports them; see the module docstring."""

    def __init__(
        self,
        exporter: SpanExporter,
        resource: Resource,
        *,
        capture_content: bool = False,
        queue_size: int = 100_000,
        batch_size: int = 512,
        interval: float = 0.5,
    ) -> None:
        self._exporter = exporter
        self._resource = resource
        self._builder = SpanBuilder(capture_content=capture_content)
        self._kinds = self._builder.kinds
        self._records: deque[EventRecord] = deque()
        self._queue_size = queue_size
        self._batch_size = batch_size
        self._interval = interval
        self._spans: list[SpanData] = []
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.records_dropped = 0
        """Records not traced because the queue was full (their spans are missing or cut short)."""
        self.spans_exported = 0
        self.spans_failed = 0
        """Spans the exporter did not take (the collector down, refusing, or too slow)."""

    @classmethod
    def from_environment(cls, replica_id: str, environ: Mapping[str, str] = os.environ) -> RecordTracer:
        """A tracer exporting with the SDK's OTLP/HTTP exporter, configured by ``OTEL_*``."""
        capture = environ.get(CAPTURE_CONTENT, "").strip().lower() == "true"
        return cls(OTLPSpanExporter(), resource_for(replica_id), capture_content=capture)

    @property
    def spans_dropped(self) -> int:
        """Spans not built (too many open at once) or not exported."""
        return self._builder.dropped + self.spans_failed

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

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="record tracer")

    async def stop(self) -> None:
        """Trace what is queued, end what is still open, export it all, then stop."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self._build()
        self._builder.close_all(time.time_ns())
        self._spans.extend(self._builder.spans_to_export())
        while self._spans:
            await self._export()
        await asyncio.to_thread(self._exporter.shutdown)

    async def _run(self) -> None:
        last_export = time.monotonic()
        while True:
            await self._wakeup.wait()
            await asyncio.sleep(self._interval / 5)  # let a batch of records gather
            self._wakeup.clear()
            self._build()
            due = time.monotonic() - last_export >= self._interval
            if self._spans and (due or len(self._spans) >= self._batch_size or not self._records):
                await self._export()
                last_export = time.monotonic()

    def _build(self) -> None:
        records, builder = self._records, self._builder
        while records:
            record = records.popleft()
            try:
                builder.receive(record)
            except Exception:  # a record we cannot read must not stop tracing
                log.exception("tracing: could not read %s %s", record.kind, record.id)
        self._spans.extend(builder.spans_to_export())

    async def _export(self) -> None:
        batch, self._spans = self._spans[: self._batch_size], self._spans[self._batch_size :]
        readable = [self._readable(span) for span in batch]
        try:
            result = await asyncio.to_thread(self._exporter.export, readable)
        except Exception as exc:  # the exporter logs its own failures; count them here
            log.warning("tracing: exporting %d spans failed: %r", len(batch), exc)
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            self.spans_exported += len(batch)
        else:
            self.spans_failed += len(batch)

    def _readable(self, span: SpanData) -> ReadableSpan:
        parent = (
            SpanContext(span.trace_id, span.parent_span_id, is_remote=False, trace_flags=_SAMPLED)
            if span.parent_span_id is not None
            else None
        )
        status = Status(StatusCode.ERROR, span.error) if span.error is not None else Status(StatusCode.UNSET)
        return ReadableSpan(
            name=span.name,
            context=SpanContext(span.trace_id, span.span_id, is_remote=False, trace_flags=_SAMPLED),
            parent=parent,
            resource=self._resource,
            attributes=span.attributes,
            kind=SpanKind.CLIENT if span.kind == "client" else SpanKind.INTERNAL,
            status=status,
            start_time=span.start_ns,
            end_time=span.end_ns if span.end_ns is not None else span.start_ns,
            instrumentation_scope=_SCOPE,
        )
