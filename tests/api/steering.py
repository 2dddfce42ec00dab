"""A tree whose sub-agent waits at a gate: what the steering, pricing and budget tests drive.

The main agent delegates one task (``Sub work.``) and, with ``sibling``, a second one in
parallel (``Sibling work.``); the sub-agent runs a terminal command that waits until the test
creates ``gate`` in the workspace, then finishes. Served over HTTP by ``mock-llm`` in the OpenAI
dialect under a model name the price table knows, each answer with fixed usage.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator

from taskwire.llm.mock_server import create_mock_app
from tests.api.helpers import all_events, create
from tests.servers import RunningServer, isolated_settings, serve_app, taskwire_server

MODEL = "gpt-4o-mini"
USAGE = {"input_tokens": 1000, "output_tokens": 100, "cache_read_tokens": 200}
SUB_PROMPT = "Sub work."
SIBLING_PROMPT = "Sibling work."


def gate_command(gate: Path) -> str:
    # Bounded: it gives up after 100 s, so a broken test cannot leave a process behind.
    return f"for i in $(seq 1 2000); do [ -e {gate} ] && break; sleep 0.05; done; echo released"


def task(description: str, prompt: str) -> dict[str, Any]:
    return {"name": "task", "arguments": {"description": description, "prompt": prompt, "subagent_type": "general-purpose"}}


def gated_script(gate: Path, *, sibling: bool = False, sub_turns: int = 1) -> dict[str, Any]:
    """The main agent's tasks; the sub-agent waits at ``gate`` (``sub_turns`` times: one terminal
    call per turn), then finishes; the sibling thinks once and finishes."""
    wait = {"tool_calls": [{"name": "terminal", "arguments": {"command": gate_command(gate)}}], "usage": USAGE}
    done = {"tool_calls": [{"name": "finish", "arguments": {"message": "sub done"}}], "usage": USAGE}
    lanes = [
        {"name": "sub", "match": {"first_user_ends_with": SUB_PROMPT}, "turns": [wait] * sub_turns + [done]},
        {"name": "main", "turns": [
            {"tool_calls": [task("Sub", SUB_PROMPT)] + ([task("Sibling", SIBLING_PROMPT)] if sibling else []), "usage": USAGE},
            {"tool_calls": [{"name": "finish", "arguments": {"message": "all done"}}], "usage": USAGE},
        ]},
    ]
    if sibling:
        think = {"tool_calls": [{"name": "think", "arguments": {"thought": "sibling at work"}}], "usage": USAGE}
        lanes.insert(0, {"name": "sibling", "match": {"first_user_ends_with": SIBLING_PROMPT}, "optional": True,
                         "turns": [think, {"tool_calls": [{"name": "finish", "arguments": {"message": "sibling done"}}],
                                           "usage": USAGE}]})
    return {"lanes": lanes}


@dataclass
class GatedTree:
    server: RunningServer
    log: Path
    gate: Path
    url: str

    def agent(self, **extra: Any) -> dict[str, Any]:
        llm = {"api": "openai", "model": MODEL, "base_url": f"{self.url}/v1", "api_key": "k"}
        return {"kind": "native", "llm": llm, **extra}

    async def start(self, message: str = "Main work.", **extra: Any) -> str:
        return (await create(self.server, agent=self.agent(**extra), initial_message=message))["id"]

    def requests(self) -> list[dict[str, Any]]:
        """Each model request's body, in arrival order."""
        if not self.log.exists():
            return []
        return [json.loads(json.loads(line)["body"]) for line in self.log.read_text().splitlines()]

    def open_gate(self) -> None:
        self.gate.touch()


@asynccontextmanager
async def gated_tree(tmp_path: Path, script: dict[str, Any], **settings: Any) -> AsyncIterator[GatedTree]:
    log = tmp_path / "requests.jsonl"
    async with serve_app(create_mock_app(script, log_path=log)) as url:
        async with taskwire_server(isolated_settings(tmp_path, **settings)) as server:
            tree = GatedTree(server, log, tmp_path / "gate", url)
            try:
                yield tree
            finally:
                tree.open_gate()  # never leave a command waiting


def user_texts(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


async def subagent_waiting(server: RunningServer, conversation_id: str, prompt: str = SUB_PROMPT,
                           timeout: float = 60) -> str:
    """Wait until the sub-agent given ``prompt`` runs its terminal call; its id."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        tree = (await server.client.get(f"/api/conversations/{conversation_id}/subagents")).json()
        for entry in tree:
            events = await all_events(server, conversation_id, subagent_id=entry["subagent_id"])
            if any(e["kind"] == "MessageEvent" and e.get("content") == prompt for e in events) and any(
                e["kind"] == "ActionEvent" and e["tool_name"] == "terminal" for e in events
            ):
                return entry["subagent_id"]
        assert asyncio.get_running_loop().time() < deadline, "the sub-agent never reached its gate"
        await asyncio.sleep(0.05)
