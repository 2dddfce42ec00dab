"""Real servers for tests: any ASGI app under uvicorn on a free loopback port."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator

import httpx
import uvicorn

from taskwire.api.app import create_app
from taskwire.api.serving import uvicorn_config
from taskwire.settings import Settings
from tests.services import free_port, wait_until

REPO = Path(__file__).resolve().parents[1]
START_TIMEOUT = 60.0


@asynccontextmanager
async def serve_app(app: Any, settings: Settings | None = None) -> AsyncIterator[str]:
    """Serve ``app`` on 127.0.0.1 at a free port; yields its base URL (``http://127.0.0.1:N``).
    With ``settings`` (a taskwire app), uvicorn is configured as ``taskwire serve`` does it."""
    if settings is not None:
        config = uvicorn_config(app, settings, host="127.0.0.1", port=0)
    else:
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


TESTS = Path(__file__).resolve().parent
"""The tests' folder (its recorded transcripts)."""


def isolated_settings(tmp_path: Path, **overrides: Any) -> Settings:
    """Settings isolated in ``tmp_path`` (its own SQLite file and workspaces)."""
    values: dict[str, Any] = {
        "workspace_path": tmp_path / "workspace",
        "database_url": f"sqlite:///{tmp_path / 'taskwire.db'}",
        "llm_api": "scripted",
        # A test's own folders are workspaces too, and the recordings beside the tests may be
        # named by a request (a claude_sdk ``replay``).
        "workspace_roots": [tmp_path, TESTS],
        # kind: openhands only where a test asks for it (not the checkout's venv, found by default).
        "openhands_python": "",
    }
    values.update(overrides)
    return Settings(**values)


@asynccontextmanager
async def taskwire_server(settings: Settings) -> AsyncIterator[RunningServer]:
    """A real taskwire server for ``settings``."""
    app = create_app(settings)
    async with serve_app(app, settings) as url:
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


class ServerProcess:
    """One ``taskwire serve`` process (a replica); its output goes to ``<folder>/<name>.log``."""

    @classmethod
    def sharing(cls, name: str, folder: Path, settings: Settings) -> ServerProcess:
        """A process on ``settings``' database, forwarding on, none of this process's ``OH_*``
        and no config file: the server to kill -9 and restart in-process on the same store."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
        env.update(OH_DATABASE_URL=settings.resolved_database_url(), OH_FORWARD_SUBAGENT_EVENTS="true",
                   OH_CONFIG_FILE=str(folder / "none.toml"))
        return cls(name, folder, env)

    def __init__(self, name: str, folder: Path, env: dict[str, str]) -> None:
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.ws_url = f"ws://127.0.0.1:{self.port}"
        self.log_path = folder / f"{name}.log"
        # Unique on the machine: tests of other runs may share the Redis (and its command channels).
        self.replica_id = f"{name}-{uuid.uuid4().hex[:8]}"
        self.env = {**env, "OH_REPLICA_ID": self.replica_id, "OH_WORKSPACE_PATH": str(folder / name)}
        self.process: subprocess.Popen[bytes] | None = None
        self.client = httpx.AsyncClient(base_url=self.url, timeout=30)

    async def __aenter__(self) -> ServerProcess:
        """Started; on exit, stopped (SIGTERM) and its client closed."""
        try:
            await self.start()
        except BaseException:
            await self.client.aclose()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            await self.stop()
        finally:
            await self.client.aclose()

    async def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "taskwire.cli", "serve", "--port", str(self.port)],
                cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            )
        await wait_until(self._answers, timeout=START_TIMEOUT, what=f"replica {self.name} to answer ({self.log()})")

    async def _answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"replica {self.name} exited with {self.process.returncode}: {self.log()}")
        try:
            return (await self.client.get("/alive")).status_code == 200
        except httpx.TransportError:
            return False

    async def ready(self) -> tuple[int, dict[str, Any]]:
        response = await self.client.get("/ready")
        return response.status_code, response.json()

    async def kill(self) -> None:
        """SIGKILL: the process dies at once, as a crashed machine would."""
        await self._end(signal.SIGKILL)

    async def stop(self) -> None:
        await self._end(signal.SIGTERM)

    async def _end(self, sig: signal.Signals) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                await asyncio.wait_for(asyncio.to_thread(self.process.wait), 30)
            except asyncio.TimeoutError:
                self.process.kill()
                await asyncio.to_thread(self.process.wait)
        self.process = None

    def log(self) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return text[-3000:]
