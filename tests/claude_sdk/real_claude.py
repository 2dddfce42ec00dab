"""The real Claude Code (the CLI bundled with ``claude-agent-sdk``) against ``mock-llm``, offline."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import claude_agent_sdk

from taskwire.llm.mock_server import create_mock_app
from taskwire.llm.script import Script
from tests.services import need
from tests.peers import offline_claude_env
from tests.servers import serve_app

BUNDLED_CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
DEMO = Path(__file__).resolve().parents[2] / "config" / "demo"


def need_claude_code() -> None:
    """Skip without the bundled CLI (fail in CI)."""
    need(os.access(BUNDLED_CLI, os.X_OK), f"claude-agent-sdk's bundled Claude Code is missing ({BUNDLED_CLI})")


@dataclass
class Mock:
    url: str
    script: Script


@asynccontextmanager
async def mock_llm(script: str | Path | Mapping[str, Any], log_path: Path) -> AsyncIterator[Mock]:
    """``taskwire mock-llm`` serving ``script`` on a free loopback port."""
    app = create_mock_app(script, log_path=log_path)
    async with serve_app(app) as url:
        yield Mock(url=url, script=app.state.script)


def claude_agent(mock: Mock, home: Path, **extra: Any) -> dict[str, Any]:
    """A ``claude_sdk`` agent whose Claude Code talks only to ``mock``, with its own ``HOME``."""
    env = offline_claude_env(mock.url, home)
    return {"kind": "claude_sdk", "permission_mode": "bypassPermissions", "env": env, **extra}


def claude_children() -> list[int]:
    """Claude Code processes this test process started and that still run."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            exe = os.readlink(entry / "exe")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and Path(exe) == BUNDLED_CLI:
            found.append(int(entry.name))
    return found
