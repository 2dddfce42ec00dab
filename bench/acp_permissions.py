"""Permissions through ``taskwire acp``: how fast a sub-agent's request reaches the editor, and
the editor's answer reaches the waiting call.

``taskwire acp`` runs embedded (its own SQLite store, forwarding on) under an editor made with
the ``agent-client-protocol`` package's client side. A sub-agent runs ``--calls`` ``think``
calls one after another under an approval policy naming ``think`` (the tool costs nothing);
the editor allows each request as it comes. Afterwards the store is read for the events'
timestamps (same machine, same clock):

- request → editor: from the ``PermissionRequestEvent``'s ``timestamp`` to the editor receiving
  ``session/request_permission``; beside it, the ceiling: from the ``ActionEvent`` stored just
  before it to its ``tool_call`` update reaching the editor (any event's way to the editor);
- editor answer → tool ran: from the editor returning its answer to the ``timestamp`` of the
  call's ``ObservationEvent``; beside it, the in-process answer of the same runtime with no
  editor between (``bench/permissions.py``'s path without HTTP): the REST-free ceiling.

Figures only; nothing is asserted.

    .venv/bin/python bench/acp_permissions.py [--calls 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.schema import AllowedOutcome, RequestPermissionResponse
from common import ROOT, isolated_settings, taskwire_server
from permissions import quantiles, script, seconds
from rich.console import Console
from rich.table import Table

from tests.api.helpers import all_events


class Editor:
    """The editor's side: notes when each update and request arrives, allows every request."""

    def __init__(self) -> None:
        self.call_seen: dict[str, float] = {}
        self.asked: dict[str, float] = {}
        self.answered: dict[str, float] = {}

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if getattr(update, "session_update", None) == "tool_call":
            self.call_seen.setdefault(update.tool_call_id, time.time())

    async def request_permission(self, options: Any, session_id: str, tool_call: Any, **kwargs: Any) -> RequestPermissionResponse:
        self.asked[tool_call.field_meta["taskwire"]["requestId"]] = time.time()
        allow = next(o for o in options if o.kind == "allow_once")
        self.answered[tool_call.tool_call_id] = time.time()
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=allow.option_id))


async def through_the_editor(folder: Path, calls: int) -> tuple[dict[str, list[float]], str]:
    editor = Editor()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    env.update(OH_WORKSPACE_PATH=str(folder / "store"), OH_CONFIG_FILE=str(folder / "none.toml"),
               OH_FORWARD_SUBAGENT_EVENTS="true", OH_IDLE_UNLOAD_SECONDS="0")
    agent = {"kind": "native", "approval": ["think"], "max_iterations": calls + 10,
             "llm": {"api": "scripted", "script": script(calls)}}
    async with spawn_agent_process(editor, sys.executable, "-m", "taskwire.cli", "acp", "--log-level", "WARNING",
                                   env=env, cwd=ROOT, transport_kwargs={"limit": 64 * 1024 * 1024}) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(folder / "project"), mcp_servers=[], taskwire={"agent": agent})
        await conn.prompt(session_id=session.session_id, prompt=[{"type": "text", "text": "Go."}])
    settings = isolated_settings(folder, workspace_path=folder / "store",
                                 database_url=f"sqlite:///{folder / 'store' / 'taskwire.db'}")
    async with taskwire_server(settings) as server:
        [sub] = (await server.client.get(f"/api/conversations/{session.session_id}/subagents")).json()
        stored = await all_events(server, sub["subagent_id"])
    figures: dict[str, list[float]] = {"request": [], "action": [], "answer": []}
    for event in stored:
        kind = event["kind"]
        if kind == "ActionEvent" and event["tool_call_id"] in editor.call_seen:
            figures["action"].append(editor.call_seen[event["tool_call_id"]] - seconds(event["timestamp"]))
        elif kind == "PermissionRequestEvent" and event["request_id"] in editor.asked:
            figures["request"].append(editor.asked[event["request_id"]] - seconds(event["timestamp"]))
        elif kind == "ObservationEvent" and event["tool_call_id"] in editor.answered:
            figures["answer"].append(seconds(event["timestamp"]) - editor.answered[event["tool_call_id"]])
    assert len(figures["answer"]) == calls, f"{len(figures['answer'])} of {calls} calls ran"
    return figures, session.session_id


async def in_process(folder: Path, calls: int) -> list[float]:
    """The same run answered in the runtime's own process, as soon as each request is stored."""
    settings = isolated_settings(folder, forward_subagent_events=True)
    figures: list[float] = []
    async with taskwire_server(settings) as server:
        runtime = server.runtime
        agent = {"kind": "native", "approval": ["think"], "max_iterations": calls + 10,
                 "llm": {"api": "scripted", "script": script(calls)}}
        record = await runtime.create(agent, run=False)
        answered: dict[str, float] = {}
        async with server.app.state.bus.subscribe(record.id, maxsize=100_000) as subscription:
            await runtime.send_message(record.id, "Go.", run=True)
            while len(figures) < calls:
                event = json.loads((await subscription.get()).json)
                if event.get("kind") == "PermissionRequestEvent":
                    answered[event["tool_call_id"]] = time.time()
                    await runtime.answer_permission(record.id, event["request_id"], {"decision": "allow"}, "rest")
                elif event.get("kind") == "ObservationEvent" and event.get("tool_call_id") in answered:
                    figures.append(seconds(event["timestamp"]) - answered.pop(event["tool_call_id"]))
    return figures


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="permission requests in the run")
    args = parser.parse_args()
    console = Console(width=max(120, Console().width))
    console.log(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {args.calls} requests")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "acp").mkdir()
        (folder / "direct").mkdir()
        figures, _ = await through_the_editor(folder / "acp", args.calls)
        direct = await in_process(folder / "direct", args.calls)
    table = Table(title=f"permissions through embedded taskwire acp: {args.calls} requests from a sub-agent (ms p50 / p99)")
    table.add_column("request → editor", justify="right")
    table.add_column("ceiling: ActionEvent → editor", justify="right")
    table.add_column("editor answer → tool ran", justify="right")
    table.add_column("ceiling: in-process answer → tool ran", justify="right")
    table.add_row(quantiles(figures["request"]), quantiles(figures["action"]), quantiles(figures["answer"]), quantiles(direct))
    console.print(table)


if __name__ == "__main__":
    asyncio.run(main())
