"""``GET /metrics``: Prometheus text, behind the session API key when keys are set.

Each app has its own ``CollectorRegistry`` (``app.state.metrics.registry``; never the
client's process-wide default: two servers run in one process). The values are plain counts
the runtime, store, bus, sockets, webhooks and tracer keep anyway, read when scraped, so
nothing on the agent's path touches a metrics library.
"""

from __future__ import annotations

from typing import Any, Iterator
from urllib.parse import urlsplit

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.datastructures import State

from ..telemetry.histogram import APPEND_SECONDS, Histogram
from ..telemetry.loop_lag import LoopLag
from ..telemetry.record_counts import RecordCounts

router = APIRouter(tags=["metrics"])


class Metrics:
    """One server's metrics: the counts fed by hooks, and the registry ``/metrics`` renders."""

    def __init__(self, state: State) -> None:
        self.records = RecordCounts()
        self.append_seconds = Histogram(APPEND_SECONDS)
        self.loop_lag = LoopLag()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(TaskwireCollector(state, self))


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    """Every metric of this server, in the Prometheus text format."""
    return Response(generate_latest(request.app.state.metrics.registry), media_type=CONTENT_TYPE_LATEST)


class TaskwireCollector(Collector):
    """Reads the server's counts at scrape time (``collect`` runs on the event loop's thread)."""

    def __init__(self, state: State, metrics: Metrics) -> None:
        self._state = state
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        yield from self._records()
        yield from self._store()
        yield from self._loop()
        yield from self._subscribers()
        yield from self._bus()
        yield from self._webhooks()
        yield from self._runtime()
        yield from self._tracing()

    def _records(self) -> Iterator[Metric]:
        counts = self._metrics.records
        yield _labelled(CounterMetricFamily, "taskwire_events_appended", "Events stored, by kind.", ["kind"], counts.appended)
        yield CounterMetricFamily(
            "taskwire_events_forwarded", "Sub-agent events published live on their root's topic.", value=counts.forwarded
        )
        yield _labelled(CounterMetricFamily, "taskwire_runs", "Runs of root conversations ended, by final status.", ["status"], counts.runs)
        yield GaugeMetricFamily("taskwire_runs_running", "Root conversations running now.", value=counts.runs_running)
        yield _labelled(CounterMetricFamily, "taskwire_subagents", "Sub-agents ended, by status.", ["status"], counts.subagents)
        yield GaugeMetricFamily("taskwire_subagents_running", "Sub-agents running now.", value=counts.subagents_running)
        yield _labelled(CounterMetricFamily, "taskwire_llm_requests", "LLM requests answered, by model.", ["model"], counts.llm_requests)
        yield _labelled(CounterMetricFamily, "taskwire_llm_cost_usd",
                        "US dollars LLM calls cost (the backend's own figure, else the price table's), by agent type "
                        "(main, or the sub-agent's type).", ["agent_type"], counts.llm_cost_usd)
        yield _labelled(CounterMetricFamily, "taskwire_llm_unpriced_requests",
                        "LLM calls whose price is unknown (a model the price table does not list), by agent type.",
                        ["agent_type"], counts.llm_unpriced)
        tokens = CounterMetricFamily("taskwire_llm_tokens", "LLM tokens, by model and type.", labels=["model", "type"])
        for (model, kind), value in sorted(counts.llm_tokens.items()):
            tokens.add_metric([model, kind], value)
        yield tokens
        yield _labelled(CounterMetricFamily, "taskwire_llm_retries", "Model calls tried again after a transient failure, by reason.",
                        ["reason"], counts.llm_retries)

    def _store(self) -> Iterator[Metric]:
        histogram: Histogram = self._metrics.append_seconds
        yield HistogramMetricFamily(
            "taskwire_store_append_seconds", "Seconds from an append being queued to it being stored.",
            buckets=histogram.cumulative(), sum_value=histogram.sum,
        )

    def _loop(self) -> Iterator[Metric]:
        lag: LoopLag = self._metrics.loop_lag
        yield HistogramMetricFamily(
            "taskwire_event_loop_lag_seconds", "Seconds the event loop ran a timer late (sampled every 50 ms).",
            buckets=lag.seconds.cumulative(), sum_value=lag.seconds.sum,
        )
        yield GaugeMetricFamily("taskwire_event_loop_lag_max_seconds", "The largest event-loop lag seen since the server started.", value=lag.max)
        yield _labelled(CounterMetricFamily, "taskwire_gc_pause_seconds", "Seconds the cyclic garbage collector ran, by the generation it collected.",
                        ["generation"], {str(g): v for g, v in lag.gc_seconds.items()})
        yield GaugeMetricFamily("taskwire_gc_pause_max_seconds", "The longest pause of the garbage collector since the server started.", value=lag.gc_max)

    def _subscribers(self) -> Iterator[Metric]:
        limit = self._state.subscriber_limit
        yield GaugeMetricFamily("taskwire_subscribers", "Live subscribers (sockets, SSE).", value=limit.active)
        bus = getattr(self._state, "bus", None)
        depths = bus.queue_depths() if bus is not None else []
        yield GaugeMetricFamily("taskwire_subscriber_queued_events", "Events queued for live subscribers, all together.", value=sum(depths))
        yield GaugeMetricFamily("taskwire_subscriber_queue_depth_max", "Events queued for the live subscriber furthest behind.", value=max(depths, default=0))
        yield _labelled(CounterMetricFamily, "taskwire_subscribers_closed", "Subscribers the server closed, by reason (too_slow: fell a whole queue behind).", ["reason"], limit.closes)

    def _bus(self) -> Iterator[Metric]:
        bus = getattr(self._state, "bus", None)
        yield GaugeMetricFamily("taskwire_bus_healthy", "1 while the bus can deliver (Redis up), else 0.", value=int(bool(bus and bus.healthy)))
        yield CounterMetricFamily(
            "taskwire_bus_publish_failures", "Records the bus could not publish (Redis down, or its outbound queue full).",
            value=getattr(bus, "dropped", 0),
        )
        reconnects = CounterMetricFamily("taskwire_bus_reconnects", "Redis connections that came back after they were lost.", labels=["connection"])
        for connection, part in (("publish", getattr(bus, "sender", None)), ("subscribe", getattr(bus, "receiver", None))):
            reconnects.add_metric([connection], getattr(part, "reconnects", 0))
        yield reconnects

    def _webhooks(self) -> Iterator[Metric]:
        delivered = CounterMetricFamily("taskwire_webhook_delivered_events", "Events delivered to webhook receivers.", labels=["receiver"])
        dropped = CounterMetricFamily("taskwire_webhook_dropped_events", "Events dropped for webhook receivers (queue full, or retries spent).", labels=["receiver"])
        failed = CounterMetricFamily("taskwire_webhook_failed_batches", "Webhook batches given up after their retries.", labels=["receiver"])
        for dispatcher in getattr(self._state, "webhooks", []):
            status = dispatcher.status()
            receiver = _receiver(status["url"])
            delivered.add_metric([receiver], status["delivered"])
            dropped.add_metric([receiver], status["dropped"])
            failed.add_metric([receiver], status["failed_batches"])
        yield delivered
        yield dropped
        yield failed

    def _runtime(self) -> Iterator[Metric]:
        runtime = getattr(self._state, "runtime", None)
        if runtime is None:
            return
        yield GaugeMetricFamily("taskwire_conversations_loaded", "Root conversations held in memory.", value=runtime.loaded_count)
        yield GaugeMetricFamily("taskwire_leases_owned", "Conversation leases this replica holds (replicas only).", value=runtime.ownership.lease_count)
        yield CounterMetricFamily(
            "taskwire_llm_rate_limit_waits", "Model requests held back by a rate limit another request of this server was told of.",
            value=runtime.llm_gates.waits,
        )
        yield CounterMetricFamily(
            "taskwire_lease_takeovers", "Runs taken over from the store after their owner was gone (a lapsed lease, a restart).",
            value=runtime.takeovers,
        )

    def _tracing(self) -> Iterator[Metric]:
        tracer = getattr(self._state, "tracer", None)
        yield GaugeMetricFamily("taskwire_tracing_enabled", "1 when spans are exported.", value=int(tracer is not None))
        if tracer is None:
            return
        yield CounterMetricFamily("taskwire_trace_spans_exported", "Spans the OTLP exporter took.", value=tracer.spans_exported)
        yield CounterMetricFamily("taskwire_trace_spans_dropped", "Spans not built (too many open) or not exported.", value=tracer.spans_dropped)
        yield CounterMetricFamily("taskwire_trace_records_dropped", "Records not traced because the tracer's queue was full.", value=tracer.records_dropped)


def _labelled(family: Any, name: str, documentation: str, labels: list[str], values: Any) -> Metric:
    metric = family(name, documentation, labels=labels)
    for label, value in sorted(values.items()):
        metric.add_metric([label], value)
    return metric


def _receiver(url: str) -> str:
    """A webhook URL without its query and credentials (a label must not leak a token)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"
