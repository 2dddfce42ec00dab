"""``OH_TRACING`` on, a run in flight, and the whole process group signalled as a terminal's
Ctrl-C (SIGINT) or a group stop (SIGTERM) does: the server stops cleanly and the spans of the
run it stopped reach the collector, the tracing worker included in what is left of no one."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.group_stop import GroupServer, alive, assert_quiet, stopped_cleanly
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


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_group_signal_stops_cleanly_and_exports_the_stopped_runs_spans(tmp_path: Path, sig: signal.Signals) -> None:
    receiver = OTLPReceiver()
    async with serve_app(receiver.app) as receiver_url:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OH_", "OTEL_"))}
        env.update({
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url,
            "OH_TRACING": "true",
            "OH_LLM_API": "scripted",
            "OH_CONFIG_FILE": str(tmp_path / "none.toml"),
        })
        server = GroupServer(tmp_path, env)
        await server.start()
        try:
            agent = {"kind": "native", "llm": {"api": "scripted", "script": SCRIPT}}
            response = await server.client.post("/api/conversations", json={"agent": agent, "initial_message": "go"})
            assert response.status_code == 201, response.text
            conversation_id = response.json()["id"]

            async def tool_ran() -> bool:
                params = {"kind": "ObservationEvent"}
                page = (await server.client.get(f"/api/conversations/{conversation_id}/events/search", params=params)).json()
                return bool(page["items"])

            await wait_until(tool_ran, timeout=60, what="the terminal tool's observation")
            children = server.descendants()
            assert children, "the tracing worker is a child of the server"
            status = await server.signal_group(sig)
        finally:
            await server.end()
        log = server.log()
        assert stopped_cleanly(status, sig), (status, log)
        assert_quiet(log)
        assert not alive(children), f"left behind: {alive(children)}"

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
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OH_", "OTEL_"))}
        env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url, "OH_TRACING": "true",
                    "OH_CONFIG_FILE": str(tmp_path / "none.toml")})
        server = GroupServer(tmp_path, env)
        await server.start()
        try:
            agent = {"kind": "native", "llm": {"api": "scripted", "script": SCRIPT}}
            response = await server.client.post("/api/conversations", json={"agent": agent, "initial_message": "go"})
            assert response.status_code == 201, response.text
            conversation_id = response.json()["id"]

            async def tool_ran() -> bool:
                params = {"kind": "ObservationEvent"}
                page = (await server.client.get(f"/api/conversations/{conversation_id}/events/search", params=params)).json()
                return bool(page["items"])

            await wait_until(tool_ran, timeout=60, what="the terminal tool's observation")
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
