"""The real ``openhands-agent-server`` 1.58.2 as its own process, from the OpenHands venv, with
or without the plugin, and what a client of it does: start a conversation, read its socket."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import websockets

from tests.openhands_plugin.helpers import openhands_env
from tests.services import free_port, need_openhands, wait_until

START_TIMEOUT = 180.0
RUN_TIMEOUT = 240.0


@dataclass
class AgentServer:
    url: str
    folder: Path
    """Its working folder: ``workspace/conversations/`` is where it persists."""
    log: Path
    client: httpx.AsyncClient
    key: str | None = None
    process: asyncio.subprocess.Process | None = field(default=None, repr=False)

    def socket_url(self, conversation_id: str, **params: str) -> str:
        query = "&".join(f"{k}={v}" for k, v in params.items())
        return f"{self.url.replace('http', 'ws', 1)}/sockets/events/{conversation_id}" + (f"?{query}" if query else "")

    def log_messages(self) -> list[str]:
        """The messages of its log records (``LOG_JSON``), in order."""
        messages = []
        for line in self.log.read_text(errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and "message" in record:
                messages.append(record["message"])
        return messages

    def conversation_dir(self, conversation_id: str) -> Path:
        return self.folder / "workspace/conversations" / conversation_id.replace("-", "")


def server_environment(folder: Path, forward: str | None, config: dict[str, Any] | None, **extra: str) -> dict[str, str]:
    """The agent-server's environment: OpenHands' own (``openhands_env``), its config file, and
    ``OH_FORWARD_SUBAGENT_EVENTS`` as given (``None``: unset)."""
    config_path = folder / "agent_server_config.json"
    config_path.write_text(json.dumps(config or {}))
    # LOG_JSON: one JSON object per log record (OpenHands' rich console wraps lines at its width).
    env = openhands_env(folder / "home", OPENHANDS_AGENT_SERVER_CONFIG_PATH=str(config_path), LOG_JSON="true", **extra)
    if forward is not None:
        env["OH_FORWARD_SUBAGENT_EVENTS"] = forward
    return env


@asynccontextmanager
async def agent_server(folder: Path, *, forward: str | None = "true", plugin: bool = True,
                       config: dict[str, Any] | None = None, python: str | None = None,
                       **extra_env: str) -> AsyncIterator[AgentServer]:
    """``python -m openhands.agent_server`` in ``folder`` (``--import-modules taskwire_openhands``
    with ``plugin``), answering; stopped with SIGTERM (then SIGKILL) at the end. ``python``: another
    OpenHands venv's interpreter than the pinned release's."""
    python = python or need_openhands()
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    argv = [python, "-m", "openhands.agent_server", "--host", "127.0.0.1", "--port", str(port)]
    if plugin:
        argv += ["--import-modules", "taskwire_openhands"]
    log = folder / "agent-server.log"
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(*argv, cwd=folder, env=server_environment(folder, forward, config, **extra_env),
                                                       stdout=out, stderr=out, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    keys = (config or {}).get("session_api_keys") or []
    headers = {"X-Session-API-Key": keys[0]} if keys else {}
    try:
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
            async def answers() -> bool:
                assert process.returncode is None, f"the agent-server exited:\n{log.read_text()[-4000:]}"
                try:
                    return (await client.get("/alive")).status_code == 200
                except httpx.HTTPError:
                    return False

            await wait_until(answers, timeout=START_TIMEOUT, what="the agent-server to answer")
            yield AgentServer(url, folder, log, client, keys[0] if keys else None, process)
    finally:
        if process.returncode is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), 30)
            except TimeoutError:
                os.killpg(process.pid, signal.SIGKILL)
                await process.wait()


def agent_spec(model_url: str, *, concurrency: int = 4, tools: list[str] | None = None) -> dict[str, Any]:
    """An OpenHands ``Agent`` on ``mock-llm`` with the ``task`` tool set."""
    return {"kind": "Agent",
            "llm": {"model": "openai/scripted", "base_url": f"{model_url}/v1", "api_key": "k", "usage_id": "agent"},
            "tools": [{"name": name} for name in (tools or ["task_tool_set"])], "tool_concurrency_limit": concurrency}


async def start_conversation(server: AgentServer, model_url: str, workspace: Path, **extra: Any) -> str:
    """``POST /api/conversations`` (not run yet); its id."""
    spec = {"agent": agent_spec(model_url, concurrency=extra.pop("concurrency", 4)),
            "workspace": {"working_dir": str(workspace)}, **extra}
    response = await server.client.post("/api/conversations", json=spec)
    assert response.status_code in (200, 201), response.text
    return response.json()["id"]


async def say(server: AgentServer, conversation_id: str, text: str = "Go.") -> None:
    """A user message that starts a run."""
    response = await server.client.post(f"/api/conversations/{conversation_id}/events",
                                        json={"role": "user", "content": [{"type": "text", "text": text}], "run": True})
    assert response.status_code == 200, response.text


def run_ended(frame: dict[str, Any]) -> bool:
    return (frame.get("kind") == "ConversationStateUpdateEvent" and frame.get("key") == "execution_status"
            and frame.get("value") in ("finished", "error", "stuck") and "parent_tool_use_id" not in frame)


@asynccontextmanager
async def socket(server: AgentServer, conversation_id: str, **params: str) -> AsyncIterator[Any]:
    """The conversation's ``/sockets/events/{id}``, its first frame (the state) read."""
    headers = {"X-Session-API-Key": server.key} if server.key else {}
    async with websockets.connect(server.socket_url(conversation_id, **params), additional_headers=headers,
                                  max_size=None) as ws:
        first = json.loads(await asyncio.wait_for(ws.recv(), 30))
        assert first["kind"] == "ConversationStateUpdateEvent", first
        yield ws


async def frames_until_run_ends(ws: Any, timeout: float = RUN_TIMEOUT) -> list[dict[str, Any]]:
    """Every frame until the root's run ends (that frame included)."""
    frames: list[dict[str, Any]] = []
    async with asyncio.timeout(timeout):
        while not frames or not run_ended(frames[-1]):
            frames.append(json.loads(await ws.recv()))
    return frames


async def run_watched(server: AgentServer, conversation_id: str, text: str = "Go.") -> list[dict[str, Any]]:
    """Say ``text`` with the socket open; the frames until the run ends."""
    async with socket(server, conversation_id) as ws:
        await say(server, conversation_id, text)
        return await frames_until_run_ends(ws)


def stamped(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in frames if "parent_tool_use_id" in f]


def unstamped(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in frames if "parent_tool_use_id" not in f and "subagent_id" not in f]


async def everything(server: AgentServer, path: str, **params: Any) -> list[dict[str, Any]]:
    """Every item of a paged search route, page after page."""
    items: list[dict[str, Any]] = []
    page_id = None
    while True:
        query = {**params, **({"page_id": page_id} if page_id else {})}
        response = await server.client.get(path, params=query)
        assert response.status_code == 200, response.text
        page = response.json()
        items += page["items"]
        page_id = page["next_page_id"]
        if not page_id:
            return items
