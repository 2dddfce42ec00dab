"""Fixtures for the LLM layer: the scripted model served over real HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taskwire.llm.anthropic import AnthropicLLM
from taskwire.llm.base import LLM
from taskwire.llm.mock_server import create_mock_app
from taskwire.llm.openai import OpenAILLM
from taskwire.llm.script import Script
from tests.servers import serve_app

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "config" / "demo"


@dataclass
class RunningMock:
    """``mock-llm`` under uvicorn: its base URL, its script and its request log."""

    url: str
    script: Script
    log_path: Path

    def requests(self) -> list[dict[str, Any]]:
        """The logged requests, in arrival order."""
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text(encoding="utf-8").splitlines()]

    def client(self, dialect: str, **kwargs: Any) -> LLM:
        """An HTTP client of ``dialect`` pointed at this mock."""
        return http_client(dialect, self.url, **kwargs)


def http_client(dialect: str, url: str, **kwargs: Any) -> LLM:
    """An HTTP client of ``dialect`` (``openai`` or ``anthropic``) for a server at ``url``."""
    if dialect == "openai":
        return OpenAILLM("scripted", base_url=f"{url}/v1", api_key="test", **kwargs)
    return AnthropicLLM("scripted", base_url=url, api_key="test", **kwargs)


@asynccontextmanager
async def serve_mock(
    script: str | Path | Mapping[str, Any], log_path: Path
) -> AsyncIterator[RunningMock]:
    """Serve ``script`` as ``mock-llm`` on a free loopback port, logging requests to
    ``log_path``."""
    app = create_mock_app(script, log_path=log_path)
    async with serve_app(app) as url:
        yield RunningMock(url=url, script=app.state.script, log_path=log_path)
