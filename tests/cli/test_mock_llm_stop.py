"""``taskwire mock-llm`` stopped as a terminal or a group stop does it: a signal to its whole
process group ends it without a traceback, with 130 after SIGINT or by SIGTERM itself."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.group_stop import stopped_cleanly
from tests.servers import REPO
from tests.services import free_port, wait_until


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_a_group_signal_ends_mock_llm_quietly(tmp_path: Path, sig: signal.Signals) -> None:
    port = free_port()
    log_path = tmp_path / "mock.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "taskwire.cli", "mock-llm", "--script", str(REPO / "config" / "demo" / "hello.yaml"),
             "--port", str(port)],
            cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        async def answers() -> bool:
            assert process.poll() is None, log_path.read_text()
            try:
                async with httpx.AsyncClient() as client:
                    await client.get(f"http://127.0.0.1:{port}/")
                return True
            except httpx.TransportError:
                return False

        await wait_until(answers, timeout=60, what="mock-llm to answer")
        os.killpg(process.pid, sig)
        status = await asyncio.wait_for(asyncio.to_thread(process.wait), 60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    output = log_path.read_text()
    assert stopped_cleanly(status, sig), (status, output)
    assert "Traceback" not in output, output
