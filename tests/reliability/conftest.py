"""A ``taskwire serve`` process under attack: its own memory, its own log."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import AsyncIterator

import pytest

from tests.servers import REPO, ServerProcess

KEY = "reliability-key"


def server_env(**extra: str) -> dict[str, str]:
    """A deployment's settings: a key, the scripted LLM, nothing inherited from ``OH_*``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    env.update(
        OH_SESSION_API_KEYS=json.dumps([KEY]),
        OH_LLM_API="scripted",
        OH_LLM_SCRIPT=str(REPO / "config" / "demo" / "hello.yaml"),
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[ServerProcess]:
    """One server process with a session key (``KEY``)."""
    server = ServerProcess("server", tmp_path, server_env())
    server.client.headers["X-Session-API-Key"] = KEY
    async with server:
        yield server


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """A process's resident memory (``VmRSS``) or its peak since the last ``reset_peak``
    (``VmHWM``), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} for process {pid}")


def reset_peak(pid: int) -> None:
    """Start measuring the peak (``VmHWM``) from now (Linux ``clear_refs``)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def log_problems(server: ServerProcess) -> list[str]:
    """Lines of the server's log that speak of a failure."""
    text = server.log_path.read_text(errors="replace")
    return [line for line in text.splitlines() if "Traceback" in line or "ERROR" in line or "Exception" in line]
