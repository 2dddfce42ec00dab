"""An interrupt stops a whole tree in order: every sub-agent, however deep, records its end
before the root's status says the run stopped, so a client that stops reading there misses
nothing."""

from __future__ import annotations

import json
from pathlib import Path

from tests.api.helpers import all_events, create, scripted_agent
from tests.servers import RunningServer, isolated_settings, taskwire_server, wait_for_status
from tests.services import wait_until

SLEEP = {"tool_calls": [{"name": "terminal", "arguments": {"command": "sleep 30"}}]}
SCRIPT = json.dumps({"lanes": [
    {"name": "deep", "match": {"first_user_ends_with": "Sleep deep."}, "turns": [SLEEP]},
    {"name": "middle", "match": {"first_user_ends_with": "Nest."}, "turns": [
        {"tool_calls": [{"name": "task", "arguments": {"description": "deep", "prompt": "Sleep deep."}}]}]},
    {"name": "quick", "match": {"first_user_ends_with": "Sleep here."}, "turns": [SLEEP]},
    {"name": "main", "turns": [{"tool_calls": [
        {"name": "task", "arguments": {"description": "nest", "prompt": "Nest."}},
        {"name": "task", "arguments": {"description": "sleep", "prompt": "Sleep here."}}]}]},
]})


async def _interrupt_when_both_sleep(server: RunningServer) -> list[dict]:
    conversation = await create(server, agent=scripted_agent(SCRIPT), initial_message="Go.")
    cid = conversation["id"]

    async def both_sleep() -> bool:
        events = await all_events(server, cid, include_subagents="true")
        return sum(e["kind"] == "ActionEvent" and e["tool_name"] == "terminal" for e in events) == 2

    await wait_until(both_sleep, timeout=60, what="both leaves to sleep")
    await server.client.post(f"/api/conversations/{cid}/interrupt")
    await wait_for_status(server.client, cid, {"paused"})
    return await all_events(server, cid, include_subagents="true")


async def test_interrupt_records_every_subagents_end_before_the_roots_paused(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        events = await _interrupt_when_both_sleep(server)
    paused = next(e["seq"] for e in events if e["kind"] == "ConversationStateUpdateEvent"
                  and e["value"] == "paused" and "subagent_id" not in e)
    assert [e for e in events if e["seq"] > paused] == []
    finished = [e for e in events if e["kind"] == "SubagentFinishedEvent"]
    assert len(finished) == 3 and {e["status"] for e in finished} == {"cancelled"}
    closed = {e["tool_call_id"]: e["status"] for e in events if e["kind"] == "ObservationEvent"}
    assert len(closed) == 5 and set(closed.values()) == {"failed"}  # every call ran; none left open
