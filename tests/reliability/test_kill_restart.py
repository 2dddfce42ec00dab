"""One machine: a server killed (``kill -9``) mid-run, restarted on the same database, still
has every event a client saw over the socket, closes what it left open, and goes on."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.api.helpers import all_events, scripted_agent
from tests.servers import ServerProcess, isolated_settings, taskwire_server, wait_for_status
from tests.services import wait_until

SCRIPT = json.dumps({"lanes": [
    {"name": "sleeper", "match": {"first_user_ends_with": "Sleep."}, "turns": [
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "sleep 30"}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"message": "slept"}}]}]},
    {"name": "main", "turns": [
        {"tool_calls": [{"name": "task", "arguments": {"description": "sleep", "prompt": "Sleep."}}]},
        {"text": "The sub-agent was interrupted; I carried on."}]},
]})


async def test_restart_after_a_kill_closes_open_calls_and_subagents_and_the_run_can_go_on(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, forward_subagent_events=True)
    first = ServerProcess.sharing("first", tmp_path, settings)
    await first.start()
    try:
        response = await first.client.post("/api/conversations", json={"agent": scripted_agent(SCRIPT), "initial_message": "Go."})
        cid = response.json()["id"]
        seen: list[dict[str, Any]] = []
        watching = asyncio.create_task(watch(f"{first.ws_url}/sockets/events/{cid}", seen))

        async def sleeping() -> bool:
            found = await first.client.get(f"/api/conversations/{cid}/events/search",
                                           params={"include_subagents": "true", "kind": "ActionEvent"})
            return any(e["tool_name"] == "terminal" for e in found.json()["items"])

        await wait_until(sleeping, timeout=60, what="the sub-agent to start sleeping")
        await wait_until(lambda: any(f.get("kind") == "ActionEvent" and f.get("tool_name") == "terminal" for f in seen),
                         timeout=60, what="the socket to show the sleeping call")
    finally:
        await first.kill()
        await first.client.aclose()
    await asyncio.wait_for(watching, 30)  # the socket ends with the process

    async with taskwire_server(settings) as server:
        info = (await server.client.get(f"/api/conversations/{cid}")).json()
        assert info["status"] == "paused"
        everything = await all_events(server, cid, include_subagents=True)
        # Every event the client saw before the kill is stored, as it saw it; seq is unique.
        stored = {e["id"]: e for e in everything}
        persisted = [f for f in seen if "seq" in f]
        assert persisted and all(stored.get(f["id"]) == f for f in persisted)
        seqs = [e["seq"] for e in everything]
        assert len(seqs) == len(set(seqs)) and seqs == sorted(seqs)
        tree = (await server.client.get(f"/api/conversations/{cid}/subagents")).json()
        assert [s["status"] for s in tree] == ["error"]
        sub = tree[0]
        closing = [e for e in everything if e["kind"] == "ObservationEvent"]
        by_call = {e["tool_call_id"]: e for e in closing}
        sleep_call = next(e for e in everything if e["kind"] == "ActionEvent" and e["tool_name"] == "terminal")
        closed = by_call[sleep_call["tool_call_id"]]
        assert closed["status"] == "failed" and closed["is_error"]
        assert closed["subagent_id"] == sub["subagent_id"] and closed["parent_tool_use_id"] == sub["parent_tool_use_id"]
        assert by_call[sub["parent_tool_use_id"]]["status"] == "failed"
        assert "subagent_id" not in by_call[sub["parent_tool_use_id"]]
        finished = [e for e in everything if e["kind"] == "SubagentFinishedEvent"]
        assert len(finished) == 1 and finished[0]["status"] == "error"
        # Nothing is left open, and the conversation goes on from its stored events.
        await server.client.post(f"/api/conversations/{cid}/run")
        done = await wait_for_status(server.client, cid, {"finished", "error"})
        assert done["status"] == "finished"
        messages = [e["content"] for e in await all_events(server, cid, kind="MessageEvent")]
        assert messages[-1] == "The sub-agent was interrupted; I carried on."


async def watch(url: str, seen: list[dict[str, Any]]) -> None:
    """Collect a socket's frames (sub-agents' forwarded ones too) until the server goes away."""
    try:
        async with connect(url) as ws:
            async for frame in ws:
                seen.append(json.loads(frame))
    except (ConnectionClosed, OSError):
        pass
