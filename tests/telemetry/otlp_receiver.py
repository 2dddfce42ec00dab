"""An OTLP/HTTP trace receiver for tests, on ``opentelemetry-proto``: the wire a collector reads.

Serve ``OTLPReceiver().app`` (``tests.servers.serve_app``) and point
``OTEL_EXPORTER_OTLP_ENDPOINT`` at it; ``spans`` holds what arrived.
"""

from __future__ import annotations

import gzip
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.telemetry.spans import Span

_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}


class OTLPReceiver:
    """Accepts ``POST /v1/traces`` (protobuf, gzip or not) and keeps the spans."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.resources: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/v1/traces", self._traces, methods=["POST"])])

    async def _traces(self, request: Request) -> Response:
        body = await request.body()
        if request.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        export = ExportTraceServiceRequest.FromString(body)
        for resource_spans in export.resource_spans:
            self.resources.append(_attributes(resource_spans.resource.attributes))
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans.append(Span(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex() or None,
                        name=span.name,
                        attributes=_attributes(span.attributes),
                        status=_STATUS[span.status.code],
                    ))
        return Response(ExportTraceServiceResponse().SerializeToString(), media_type="application/x-protobuf")


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


def _value(value: AnyValue) -> Any:
    field = value.WhichOneof("value")
    if field == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, field) if field else None
