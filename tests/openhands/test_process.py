"""``taskwire serve`` as a process with OpenHands agents: traces of the tree over OTLP, and a
Ctrl-C to the whole process group stopping the driver with the server."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from taskwire.llm.mock_server import create_mock_app
from tests.openhands.helpers import SCRIPTS, drivers
from tests.servers import REPO, ServerProcess, serve_app
from tests.services import need_openhands, wait_until
from tests.telemetry.otlp_receiver import OTLPReceiver
from tests.telemetry.runs import expected_span_count, run_to_end, subagents
from tests.telemetry.spans import check_tree


def server_env(python: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OH_", "OTEL_"))}
    env.update({"OH_OPENHANDS_PYTHON": python, "OH_LLM_API": "scripted", **extra})
    return env


def agent(mock_url: str) -> dict[str, Any]:
    return {"kind": "openhands", "llm": {"model": "openai/scripted", "base_url": f"{mock_url}/v1", "api_key": "k"}}


async def test_openhands_tree_is_traced_like_a_native_one(tmp_path: Path) -> None:
    python = need_openhands()
    receiver = OTLPReceiver()
    async with serve_app(receiver.app) as receiver_url, serve_app(create_mock_app(SCRIPTS / "two_builtin.yaml")) as mock_url:
        server = ServerProcess("taskwire", tmp_path, server_env(python, OTEL_EXPORTER_OTLP_ENDPOINT=receiver_url))
        await server.start()
        try:
            conversation_id = await run_to_end(server.client, agent(mock_url), "Go.")
            entries = await subagents(server.client, conversation_id)
            expected = await expected_span_count(server.client, conversation_id)
            await wait_until(lambda: len(receiver.spans) >= expected, timeout=120, what=f"{expected} spans")
        finally:
            await server.stop()
            await server.client.aclose()
    assert len(entries) == 2
    check_tree(receiver.spans, conversation_id, entries)


async def test_ctrl_c_to_the_process_group_stops_the_driver_with_the_server(tmp_path: Path) -> None:
    python = need_openhands()
    async with serve_app(create_mock_app(SCRIPTS / "slow_subagents.yaml")) as mock_url:
        server = ServerProcess("taskwire", tmp_path, server_env(python))
        before = drivers()
        with server.log_path.open("ab") as log:
            server.process = subprocess.Popen(
                [sys.executable, "-m", "taskwire.cli", "serve", "--port", str(server.port)],
                cwd=REPO, env=server.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        try:
            await wait_until(server._answers, timeout=60, what="the server to answer")
            body = {"agent": agent(mock_url) | {"subagent_types": []}, "initial_message": "Go."}
            assert (await server.client.post("/api/conversations", json=body)).status_code == 201
            await wait_until(lambda: bool(drivers() - before), timeout=60, what="a driver")
            ours = drivers() - before
            await asyncio.sleep(1)
            os.killpg(server.process.pid, signal.SIGINT)
            await asyncio.wait_for(asyncio.to_thread(server.process.wait), 60)
            await wait_until(lambda: not (drivers() & ours), timeout=30, what="the driver to end")
        finally:
            if server.process.poll() is None:
                os.killpg(server.process.pid, signal.SIGKILL)
            await server.client.aclose()
    # The driver ended with the server, and nothing of it (or of OpenHands) raised on the way out.
    # (``taskwire serve`` itself re-raises the KeyboardInterrupt uvicorn hands it; not this backend's.)
    log = server.log_path.read_text(errors="replace")
    assert "server/openhands/" not in log and "site-packages/openhands/" not in log, log
