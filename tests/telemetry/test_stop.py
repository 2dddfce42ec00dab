"""``OH_TRACING`` on, a run in flight, and the whole process group signalled as a terminal's
Ctrl-C (SIGINT) or a group stop (SIGTERM) does: the server stops cleanly and the spans of the
run it stopped reach the collector, the tracing worker included in what is left of no one."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.group_stop import GroupServer, assert_stopped_cleanly, serve_env, stopped_cleanly
from tests.servers import serve_app
from tests.services import wait_until
from tests.telemetry.otlp_receiver import OTLPReceiver

SCRIPT = """\
lanes:
  - name: main
    turns:
      - tool_calls:
          - name: terminal
            arguments: {command: echo before-the-stop}
      - text: never sent, the server stops first
        delay: 600
"""
AGENT = {"kind": "native", "llm": {"api": "scripted", "script": SCRIPT}}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_group_signal_stops_cleanly_and_exports_the_stopped_runs_spans(tmp_path: Path, sig: signal.Signals) -> None:
    receiver = OTLPReceiver()
    async with serve_app(receiver.app) as receiver_url:
        env = serve_env(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=receiver_url, OH_TRACING="true", OH_LLM_API="scripted")
        server = GroupServer(tmp_path, env)
        await server.start()
        try:
            conversation_id = await server.start_conversation(AGENT, "go")
            await wait_until(lambda: server.has_events(conversation_id, "ObservationEvent"), timeout=60,
                             what="the terminal tool's observation")
            children = server.descendants()
            assert children, "the tracing worker is a child of the server"
            status = await server.signal_group(sig)
        finally:
            await server.end()
        assert_stopped_cleanly(server, status, sig, children)

        def stopped_run_exported() -> bool:
            return any(
                s.operation == "invoke_agent" and s.attributes.get("gen_ai.conversation.id") == conversation_id
                for s in receiver.spans
            )

        await wait_until(stopped_run_exported, timeout=30, what="the stopped run's invoke_agent span")
    operations = {s.operation for s in receiver.spans}
    assert {"invoke_agent", "chat", "execute_tool"} <= operations, operations


async def test_a_tracing_worker_gone_before_the_stop_costs_one_line_saying_what_was_lost(tmp_path: Path) -> None:
    receiver = OTLPReceiver()
    async with serve_app(receiver.app) as receiver_url:
        server = GroupServer(tmp_path, serve_env(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=receiver_url, OH_TRACING="true"))
        await server.start()
        try:
            conversation_id = await server.start_conversation(AGENT, "go")
            await wait_until(lambda: server.has_events(conversation_id, "ObservationEvent"), timeout=60,
                             what="the terminal tool's observation")
            [worker] = [pid for pid in server.descendants() if b"trace_worker" in Path(f"/proc/{pid}/cmdline").read_bytes()]
            os.kill(worker, signal.SIGKILL)  # as the OOM killer would
            status = await server.signal_group(signal.SIGTERM)
        finally:
            await server.end()
    log = server.log()
    assert stopped_cleanly(status, signal.SIGTERM), (status, log)
    assert "Traceback" not in log, log
    errors = [line for line in log.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and "are lost" in errors[0], errors
