"""``taskwire serve`` stopped as an operator stops it: a signal to its whole process group (a
terminal's Ctrl-C, ``kill -- -PGID``), then what is left of it and what it printed."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.servers import REPO, START_TIMEOUT
from tests.services import free_port, wait_until

STOP_TIMEOUT = 90.0


def children(pid: int) -> set[int]:
    """Every living descendant of ``pid``, read from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pids: set[int]) -> set[int]:
    left = set()
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] != "Z":
            left.add(pid)
    return left


def serve_env(folder: Path, **settings: str) -> dict[str, str]:
    """This process's environment without any ``OH_`` or ``OTEL_`` setting, no settings file,
    and ``settings`` on top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OH_", "OTEL_"))}
    env.update({"OH_CONFIG_FILE": str(folder / "none.toml"), **settings})
    return env


class GroupServer:
    """``taskwire serve`` leading a session of its own, as a shell's job would."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.client = httpx.AsyncClient(base_url=f"http://127.0.0.1:{self.port}", timeout=30)
        self.log_path = folder / "serve.log"
        self.env = {**env, "OH_WORKSPACE_PATH": str(folder / "workspace")}
        self.process: subprocess.Popen[bytes] | None = None

    async def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "taskwire.cli", "serve", "--port", str(self.port)],
                cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        await wait_until(self._answers, timeout=START_TIMEOUT, what=f"the server to answer ({self.log()})")

    async def _answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"the server exited with {self.process.returncode}: {self.log()}")
        try:
            return (await self.client.get("/alive")).status_code == 200
        except httpx.TransportError:
            return False

    async def start_conversation(self, agent: dict[str, Any], message: str) -> str:
        """Create a conversation of ``agent`` working on ``message``; its id."""
        response = await self.client.post("/api/conversations", json={"agent": agent, "initial_message": message})
        assert response.status_code == 201, response.text
        return response.json()["id"]

    async def has_events(self, conversation_id: str, kind: str) -> bool:
        """Whether the conversation's stream holds an event of ``kind`` yet."""
        params = {"kind": kind}
        page = (await self.client.get(f"/api/conversations/{conversation_id}/events/search", params=params)).json()
        return bool(page["items"])

    def descendants(self) -> set[int]:
        assert self.process is not None
        return children(self.process.pid)

    async def signal_group(self, sig: signal.Signals) -> int:
        """Send ``sig`` to the server's whole process group; its exit status once it is gone."""
        assert self.process is not None
        os.killpg(self.process.pid, sig)
        try:
            return await asyncio.wait_for(asyncio.to_thread(self.process.wait), STOP_TIMEOUT)
        except TimeoutError:
            os.killpg(self.process.pid, signal.SIGKILL)
            await asyncio.to_thread(self.process.wait)
            raise AssertionError(f"the server did not stop within {STOP_TIMEOUT:g} s: {self.log()}") from None
        finally:
            await self.client.aclose()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    async def end(self) -> None:
        """Kill what is left (a failed test's cleanup)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            await asyncio.to_thread(self.process.wait)


def stopped_cleanly(status: int, sig: signal.Signals) -> bool:
    """Exit 0, or death by the signal itself (uvicorn re-raises the signal it caught)."""
    return status in (0, -sig, 128 + sig)


def assert_stopped_cleanly(server: GroupServer, status: int, sig: signal.Signals, children: set[int]) -> None:
    """The server exited as ``sig`` asks, printed nothing alarming, and left none of ``children``."""
    log = server.log()
    assert stopped_cleanly(status, sig), (status, log)
    assert_quiet(log)
    assert not alive(children), f"left behind: {alive(children)}"


def assert_quiet(log: str) -> None:
    """Nothing alarming in what the server printed: no traceback, no error line, no run failed
    (each child is stopped by the server, in order, not killed under a run by the signal)."""
    assert "Traceback" not in log and "shutdown failed" not in log, log
    assert not [line for line in log.splitlines() if " ERROR " in line or "run failed" in line], log
