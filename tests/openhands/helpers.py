"""An OpenHands agent pointed at ``mock-llm``'s OpenAI dialect, on a real taskwire server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taskwire.llm.mock_server import create_mock_app
from tests.servers import RunningServer, isolated_settings, serve_app, taskwire_server
from tests.services import need_openhands

SCRIPTS = Path(__file__).parent / "scripts"
REVIEWER = "---\nname: reviewer\ndescription: Reviews a piece of work in one line.\ntools: []\n---\nReview in one line.\n"


@dataclass
class Setup:
    server: RunningServer
    mock_url: str
    log: Path
    workspace: Path

    def agent(self, **extra: Any) -> dict[str, Any]:
        llm = {"model": "openai/scripted", "base_url": f"{self.mock_url}/v1", "api_key": "k"}
        return {"kind": "openhands", "llm": llm, "tools": ["task"], **extra}


def workspace_with_reviewer(folder: Path) -> Path:
    """A workspace whose ``.agents/agents/reviewer.md`` defines a file-based sub-agent type."""
    (folder / ".agents/agents").mkdir(parents=True, exist_ok=True)
    (folder / ".agents/agents/reviewer.md").write_text(REVIEWER)
    return folder


@asynccontextmanager
async def openhands_server(tmp_path: Path, script: str, **settings: Any) -> AsyncIterator[Setup]:
    """mock-llm serving ``scripts/<script>.yaml`` and a server whose openhands agents can run."""
    python = need_openhands()
    log = tmp_path / "requests.jsonl"
    async with serve_app(create_mock_app(SCRIPTS / f"{script}.yaml", log_path=log)) as mock_url:
        values = isolated_settings(tmp_path, **{"openhands_python": python, **settings})
        async with taskwire_server(values) as server:
            yield Setup(server, mock_url, log, workspace_with_reviewer(tmp_path / "ws"))


def drivers() -> set[int]:
    """The pids of every OpenHands driver process running on the machine, read from /proc."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"openhands/driver.py" in (entry / "cmdline").read_bytes():
                found.add(int(entry.name))
        except OSError:
            continue
    return found
