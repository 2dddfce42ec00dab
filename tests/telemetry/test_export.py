"""``taskwire serve`` with tracing on: spans over OTLP/HTTP (to a receiver built on
``opentelemetry-proto``, the wire any collector reads) and JSON log lines carrying the same
trace id, with forwarding off (sub-agents' records are then not published, yet traced)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.servers import ServerProcess, serve_app
from tests.services import wait_until
from tests.telemetry.otlp_receiver import OTLPReceiver
from tests.telemetry.runs import expected_span_count, native_agent, run_to_end, subagents
from tests.telemetry.spans import check_tree


async def test_spans_are_exported_and_log_lines_carry_their_run_and_trace(tmp_path: Path) -> None:
    receiver = OTLPReceiver()
    async with serve_app(receiver.app) as receiver_url:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OH_", "OTEL_"))}
        env.update({
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url,
            "OTEL_SERVICE_NAME": "taskwire-test",
            "OH_LLM_API": "scripted",
            "OH_LOG_FORMAT": "json",
            "OH_LOG_LEVEL": "info",
        })
        server = ServerProcess("taskwire", tmp_path, env)
        await server.start()
        try:
            conversation_id = await run_to_end(server.client, native_agent())
            entries = await subagents(server.client, conversation_id)
            expected = await expected_span_count(server.client, conversation_id)
            await wait_until(lambda: len(receiver.spans) >= expected, timeout=120, what=f"{expected} spans")
            exported = f"taskwire_trace_spans_exported_total {float(expected)}"
            metrics = ""

            async def counted() -> bool:  # the worker reports once the collector has answered
                nonlocal metrics
                metrics = (await server.client.get("/metrics")).text
                return exported in metrics

            await wait_until(counted, timeout=60, what="the exported spans on /metrics")
        finally:
            await server.stop()
            await server.client.aclose()
    spans = receiver.spans
    assert len(spans) == expected
    check_tree(spans, conversation_id, entries)
    assert {r["service.name"] for r in receiver.resources} == {"taskwire-test"}
    assert "taskwire_trace_spans_dropped_total 0.0" in metrics

    lines = [json.loads(line) for line in server.log_path.read_text().splitlines()]  # every line is JSON
    runs = [line for line in lines if line["message"].startswith("run ")]
    trace_id = spans[0].trace_id
    assert all(line["conversation_id"] == conversation_id and line["trace_id"] == trace_id for line in runs), runs
    assert {line["level"] for line in lines} <= {"debug", "info", "warning", "error"}
    by_agent: dict[Any, list[str]] = {}
    for line in runs:
        by_agent.setdefault(line.get("subagent_id"), []).append(line["message"])
    assert set(by_agent) == {None} | {e["subagent_id"] for e in entries}
    assert all(messages == ["run started", "run ended: finished"] for messages in by_agent.values()), by_agent
