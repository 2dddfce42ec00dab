"""``SpanData`` to the OpenTelemetry SDK's ``ReadableSpan``, exported with its OTLP/HTTP exporter.

The exporter reads the standard ``OTEL_EXPORTER_OTLP_*`` variables (endpoint, headers,
timeout, compression, certificates); the resource, ``OTEL_SERVICE_NAME`` and
``OTEL_RESOURCE_ATTRIBUTES``.
"""

from __future__ import annotations

from typing import Sequence

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from .. import __version__
from .spans import SpanData

EXPORT_BATCH = 512
"""Spans per OTLP request."""

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_SCOPE = InstrumentationScope("taskwire", __version__)


def resource_for(replica_id: str) -> Resource:
    """The resource of every span: the environment's (``OTEL_SERVICE_NAME``,
    ``OTEL_RESOURCE_ATTRIBUTES``) over taskwire's version and replica id; ``service.name`` is
    ``taskwire`` unless the environment names it."""
    ours = Resource({"service.version": __version__, "service.instance.id": replica_id})
    resource = ours.merge(Resource.create({}))  # the argument of merge wins
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "taskwire"}))
    return resource


class SpanExport:
    """Exports ``SpanData`` through an SDK exporter (default: OTLP/HTTP from the environment)
    and counts what it took and what it did not."""

    def __init__(self, replica_id: str, exporter: SpanExporter | None = None) -> None:
        self.exporter = exporter or OTLPSpanExporter()
        self.resource = resource_for(replica_id)
        self.exported = 0
        self.failed = 0

    def export(self, spans: Sequence[SpanData]) -> None:
        """Send ``spans`` in batches; blocks while the collector answers (the exporter retries
        for up to ``OTEL_EXPORTER_OTLP_TIMEOUT``). After a batch fails the rest of ``spans`` is
        given up at once: a collector that is down must not hold the worker batch after batch."""
        for start in range(0, len(spans), EXPORT_BATCH):
            batch = [self.readable(span) for span in spans[start : start + EXPORT_BATCH]]
            try:
                result = self.exporter.export(batch)
            except Exception:  # the exporter logs its own failures; a failure here is counted too
                result = SpanExportResult.FAILURE
            if result is not SpanExportResult.SUCCESS:
                self.failed += len(spans) - start
                return
            self.exported += len(batch)

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def readable(self, span: SpanData) -> ReadableSpan:
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
            resource=self.resource,
            attributes=span.attributes,
            kind=SpanKind.CLIENT if span.kind == "client" else SpanKind.INTERNAL,
            status=status,
            start_time=span.start_ns,
            end_time=span.end_ns if span.end_ns is not None else span.start_ns,
            instrumentation_scope=_SCOPE,
            events=[Event(e.name, e.attributes, e.time_ns) for e in span.events],
        )
