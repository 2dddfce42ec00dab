"""Real servers for tests: any ASGI app under uvicorn on a free loopback port."""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator

import httpx
import uvicorn

from server.api.app import create_app
from server.settings import Settings


@asynccontextmanager
async def serve_app(app: Any) -> AsyncIterator[str]:
    """Serve ``app`` on 127.0.0.1 at a free port; yields its base URL (``http://127.0.0.1:N``)."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", ws="websockets-sansio", lifespan="on")
    server = uvicorn.Server(config)
    # Leave SIGINT to pytest: a test server must not take over the process's signals.
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign]
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # raises the start-up error
            raise RuntimeError("uvicorn stopped before it started")
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@dataclass
class RunningServer:
    """A taskwire server under test, with an httpx client bound to it."""

    url: str
    app: Any
    settings: Settings
    client: httpx.AsyncClient

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://", 1)

    @property
    def runtime(self) -> Any:
        return self.app.state.runtime


def isolated_settings(tmp_path: Path, **overrides: Any) -> Settings:
    """Settings isolated in ``tmp_path`` (its own SQLite file and workspaces)."""
    values: dict[str, Any] = {
        "workspace_path": tmp_path / "workspace",
        "database_url": f"sqlite:///{tmp_path / 'taskwire.db'}",
        "llm_api": "scripted",
    }
    values.update(overrides)
    return Settings(**values)


@asynccontextmanager
async def taskwire_server(settings: Settings) -> AsyncIterator[RunningServer]:
    """A real taskwire server for ``settings``."""
    app = create_app(settings)
    async with serve_app(app) as url:
        headers = {"X-Session-API-Key": settings.session_api_keys[0]} if settings.session_api_keys else {}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
            yield RunningServer(url=url, app=app, settings=settings, client=client)


async def wait_for_status(
    client: httpx.AsyncClient, conversation_id: str, statuses: set[str], timeout: float = 60
) -> dict[str, Any]:
    """Poll a conversation until its status is one of ``statuses``; returns its info."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        info = (await client.get(f"/api/conversations/{conversation_id}")).json()
        if info.get("status") in statuses:
            return info
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"conversation stayed {info.get('status')!r}, wanted one of {statuses}")
        await asyncio.sleep(0.05)
