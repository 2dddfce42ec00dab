"""What the plugin's tests share: the OpenHands venv (``make openhands``: agent-server, sdk and
tools 1.58.2 and the plugin, editable), ``mock-llm`` scripts, sub-agent type files, and an
environment for OpenHands' processes that holds nothing of the test's own."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taskwire.llm.mock_server import create_mock_app
from tests.servers import serve_app
from tests.services import need_openhands

HERE = Path(__file__).resolve().parent
SCRIPTS = HERE / "scripts"
REVIEWER = "---\nname: reviewer\ndescription: Reviews a piece of work in one line.\ntools: []\n---\nReview in one line.\n"
PLANNER = "---\nname: planner\ndescription: Plans and delegates.\ntools: [task_tool_set]\n---\nDelegate.\n"
RUN_TIMEOUT = 240.0


def openhands_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of an OpenHands process: ours without taskwire's settings (both read the
    ``OH_`` prefix) or a path back to this venv, its own ``HOME`` (OpenHands reads user-level agent
    files there), LiteLLM's bundled prices (offline), no banner."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OH_", "PYTHON", "VIRTUAL_ENV", "SESSION_API_KEY", "LITELLM"))}
    home.mkdir(parents=True, exist_ok=True)
    return {**env, "HOME": str(home), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENHANDS_SUPPRESS_BANNER": "1",
            "PYTHONUNBUFFERED": "1", **extra}


def workspace_with_agents(folder: Path) -> Path:
    """A workspace whose ``.agents/agents/`` defines the ``reviewer`` and ``planner`` types."""
    (folder / ".agents/agents").mkdir(parents=True, exist_ok=True)
    (folder / ".agents/agents/reviewer.md").write_text(REVIEWER)
    (folder / ".agents/agents/planner.md").write_text(PLANNER)
    return folder


@dataclass
class MockLLM:
    url: str
    log: Path

    def requests(self) -> list[dict[str, Any]]:
        """Every request the model got, in order (``body``: as sent)."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@asynccontextmanager
async def mock_llm(tmp_path: Path, script: str) -> AsyncIterator[MockLLM]:
    """``mock-llm`` serving ``scripts/<script>.yaml`` (OpenAI dialect at ``url + /v1``)."""
    log = tmp_path / f"{script}.requests.jsonl"
    async with serve_app(create_mock_app(SCRIPTS / f"{script}.yaml", log_path=log)) as url:
        yield MockLLM(url, log)


async def run_stamped(tmp_path: Path, script: str, **config: Any) -> list[dict[str, Any]]:
    """``scripts/stamp_run.py`` in the OpenHands venv against ``mock-llm``: what it wrote."""
    python = need_openhands()
    workspace = workspace_with_agents(tmp_path / "ws")
    out = tmp_path / "stamped.jsonl"
    async with mock_llm(tmp_path, script) as llm:
        values = {"model_url": f"{llm.url}/v1", "workspace": str(workspace),
                  "persistence_dir": str(tmp_path / "persisted"), "root": "visualizer", **config}
        process = await asyncio.create_subprocess_exec(
            python, str(SCRIPTS / "stamp_run.py"), json.dumps(values), str(out),
            env=openhands_env(tmp_path / "home"), cwd=workspace,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        try:
            _, stderr = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert process.returncode == 0, stderr.decode()[-4000:]
    return [json.loads(line) for line in out.read_text().splitlines()]


CRITIC_PLUGIN = HERE / "fixtures/critic-plugin"
"""An OpenHands plugin directory (Claude-Code layout) whose ``agents/critic.md`` is a sub-agent type."""
TREE_CALLS = {"call_main_0_0": "planner", "call_main_0_1": "general-purpose", "call_main_0_2": "critic"}
"""``scripts/tree.yaml``: the main agent's three parallel ``task`` calls and their types."""
INNER_CALL = "call_planner_0_0"
"""``scripts/tree.yaml``: the planner's own ``task`` call (depth 2)."""
