"""Shared pieces of the benchmarks: a real server in this process, a socket client in another."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.servers import RunningServer, isolated_settings, taskwire_server  # noqa: E402

__all__ = ["RunningServer", "isolated_settings", "taskwire_server", "SocketClient", "rss_mb", "ROOT"]


def rss_mb() -> float:
    """Peak resident memory of this process, MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class SocketClient:
    """``bench/ws_client.py`` in a subprocess; ``result()`` waits for its summary."""

    def __init__(self, url: str, count: int = 0, latency: bool = False, until_finished: bool = False) -> None:
        self.args = [sys.executable, str(ROOT / "bench/ws_client.py"), url, "--count", str(count)]
        if latency:
            self.args.append("--latency")
        if until_finished:
            self.args.append("--until-finished")
        self.proc: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> SocketClient:
        self.proc = await asyncio.create_subprocess_exec(
            *self.args, stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)}
        )
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 30)
        assert line.strip() == b"connected", line
        return self

    async def result(self, timeout: float = 300) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        await self.proc.wait()
        return json.loads(line)

    async def __aexit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()


async def paced_emit(emit: Any, count: int, rate: float) -> None:
    """Emit ``count`` small tool events at about ``rate`` per second through ``emit``."""
    from taskwire.events import ActionEvent

    loop = asyncio.get_running_loop()
    start = loop.time()
    for n in range(count):
        await emit(ActionEvent(tool_name="think", tool_call_id=f"bench-{n}", arguments={"thought": f"step {n}"}))
        if rate:
            delay = start + (n + 1) / rate - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
