"""Start each server as its own process, each its own way, and read its memory from ``/proc``.

taskwire runs under its CLI (``python -m server.cli serve``) on the SQLite file; the OpenHands
agent-server runs as ``python -m openhands.agent_server`` from its own venv in the folder that
holds its ``workspace/conversations``, with no ``OH_*`` setting of taskwire's in its
environment (both read that prefix) and LiteLLM told to use its bundled model prices instead of
fetching them (the machine is offline; nothing here calls a model).

For the tree workload (``langgraph.py``): ``taskwire mock-llm`` as its own process, taskwire with
sub-agent forwarding on, and LangGraph's Agent Server under uvicorn from its own venv.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


def memory_mb(pid: int) -> dict[str, float]:
    """Resident and peak resident (``VmHWM``) MB of a process and every process below it."""
    total = {"rss": 0.0, "peak": 0.0}
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total["rss"] += int(line.split()[1]) / 1024
                elif line.startswith("VmHWM:"):
                    total["peak"] += int(line.split()[1]) / 1024
        except OSError:
            continue
        todo.extend(_children(current))
    return total


@dataclass
class Process:
    """A server being measured: its process, its base URL, and when it was started."""

    proc: asyncio.subprocess.Process
    base: str
    started: float

    def memory(self) -> dict[str, float]:
        return memory_mb(self.proc.pid)


@asynccontextmanager
async def running(argv: list[str], env: dict[str, str], cwd: Path, port: int, log: Path) -> AsyncIterator[Process]:
    """The server started (clock running from just before the exec), stopped at the end."""
    with log.open("ab") as out:
        started = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(*argv, env=env, cwd=cwd, stdout=out, stderr=out, start_new_session=True)
    try:
        yield Process(proc, f"http://127.0.0.1:{port}", started)
    finally:
        if proc.returncode is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()


def taskwire_server(db: Path, folder: Path) -> tuple[list[str], dict[str, str], int]:
    """argv, environment and port of ``taskwire serve`` on the SQLite file ``db``."""
    port = free_port()
    env = {**os.environ, "OH_DATABASE_URL": f"sqlite:///{db}", "OH_WORKSPACE_PATH": str(folder / "ws"),
           "PYTHONPATH": str(ROOT)}
    return [sys.executable, "-m", "taskwire.cli", "serve", "--port", str(port)], env, port


def peer_environment() -> dict[str, str]:
    """The environment the peer runs in: ours without ``OH_*``, offline for LiteLLM."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENHANDS_SUPPRESS_BANNER": "1"}


def openhands_server(python: Path) -> tuple[list[str], dict[str, str], int]:
    """argv, environment and port of the OpenHands agent-server from the peer's venv."""
    port = free_port()
    return [str(python), "-m", "openhands.agent_server", "--host", "127.0.0.1", "--port", str(port)], peer_environment(), port


def mock_llm(script: Path) -> tuple[list[str], dict[str, str], int]:
    """argv, environment and port of ``taskwire mock-llm`` serving ``script``."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return [sys.executable, "-m", "taskwire.cli", "mock-llm", "--script", str(script), "--port", str(port)], env, port


def langgraph_server(python: Path, app: Path, model_url: str, jobs: int) -> tuple[list[str], dict[str, str], int]:
    """argv, environment and port of the LangGraph Agent Server (in-memory runtime) under uvicorn,
    as ``langgraph dev`` would start it, serving the graph in ``app``, ``jobs`` runs at once (its
    default is one), offline: no tracing, no version check, no file persistence."""
    port = free_port()
    env = {**peer_environment(), "BENCH_MODEL_URL": model_url, "PYTHONPATH": str(app),
           "LANGSERVE_GRAPHS": json.dumps({"agent": str(app / "agent.py") + ":graph"}),
           "LANGGRAPH_RUNTIME_EDITION": "inmem", "DATABASE_URI": ":memory:", "REDIS_URI": "fake",
           "MIGRATIONS_PATH": "__inmem", "N_JOBS_PER_WORKER": str(jobs), "LANGGRAPH_DISABLE_FILE_PERSISTENCE": "true",
           "LANGGRAPH_ALLOW_BLOCKING": "true", "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false",
           "LANGGRAPH_NO_VERSION_CHECK": "true", "LANGGRAPH_CLI_NO_ANALYTICS": "1",
           "LANGSMITH_LANGGRAPH_API_VARIANT": "local_dev", "LANGGRAPH_API_URL": f"http://127.0.0.1:{port}"}
    for key in ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGGRAPH_CLOUD_LICENSE_KEY", "OPENAI_API_KEY"):
        env.pop(key, None)
    argv = [str(python), "-m", "uvicorn", "langgraph_api.server:app", "--host", "127.0.0.1", "--port", str(port),
            "--no-access-log", "--log-level", "warning"]
    return argv, env, port


def taskwire_tree_server(db: Path, folder: Path, subagents: int) -> tuple[list[str], dict[str, str], int]:
    """``taskwire serve`` for the tree workload: sub-agent events forwarded to the root's socket."""
    argv, env, port = taskwire_server(db, folder)
    env = {k: v for k, v in env.items() if not k.startswith("OH_") or k in ("OH_DATABASE_URL", "OH_WORKSPACE_PATH")}
    env.update(OH_FORWARD_SUBAGENT_EVENTS="true", OH_MAX_PARALLEL_SUBAGENTS=str(subagents), OH_WS_QUEUE_SIZE="1000000",
               OH_MAX_SUBSCRIBERS="100000", OH_CONFIG_FILE=str(folder / "none.toml"))
    return argv, env, port


async def wait_ready(client: Any, path: str, server: Process, name: str, timeout: float = 120) -> None:
    """Poll ``path`` with ``client`` (an ``httpx.AsyncClient``) until it answers 200; fail if the
    process exits first or ``timeout`` s pass."""
    import httpx

    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        try:
            if (await client.get(path)).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if server.proc.returncode is not None:
            raise RuntimeError(f"{name} exited while starting; see its log")
        await asyncio.sleep(0.1)
    raise TimeoutError(f"{name} did not answer {path} within {timeout:g} s")


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds a process has used (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
