"""The real openhands-sdk 1.58.2 on taskwire: three parallel ``task`` sub-agents (a built-in type
and a file-defined one) become taskwire sub-agents, seen like native ones over REST."""

from __future__ import annotations

from pathlib import Path

from tests.api.helpers import all_events, create
from tests.openhands.helpers import openhands_server
from tests.servers import wait_for_status

CALLS = {"call_main_0_0": "alpha done", "call_main_0_1": "beta done", "call_main_0_2": "gamma done"}


async def test_three_parallel_subagents_are_taskwire_subagents_under_their_task_calls(tmp_path: Path) -> None:
    async with openhands_server(tmp_path, "three_subagents") as oh:
        server = oh.server
        info = await create(server, agent=oh.agent(), workspace=str(oh.workspace), initial_message="Go.")
        done = await wait_for_status(server.client, info["id"], {"finished", "error"}, timeout=180)
        assert done["status"] == "finished", done

        subagents = (await server.client.get(f"/api/conversations/{info['id']}/subagents")).json()
        assert {s["parent_tool_use_id"]: (s["subagent_type"], s["status"]) for s in subagents} == {
            "call_main_0_0": ("reviewer", "completed"), "call_main_0_1": ("general-purpose", "completed"),
            "call_main_0_2": ("reviewer", "completed")}
        root = await all_events(server, info["id"])
        assert not any("parent_tool_use_id" in e or "subagent_id" in e for e in root)
        results = {e["tool_call_id"]: e["content"] for e in root if e["kind"] == "ObservationEvent" and e["tool_name"] == "task"}
        assert results == CALLS
        for call, answer in CALLS.items():
            own = await all_events(server, info["id"], parent_tool_use_id=call)
            kinds = [e["kind"] for e in own]
            assert kinds[0] == "SubagentStartedEvent" and kinds[-1] == "SubagentFinishedEvent"
            assert own[-1]["result"] == answer and own[-1]["usage"]["llm_calls"] >= 1
            assert all(e["parent_tool_use_id"] == call for e in own)
        final = [e for e in root if e["kind"] == "ObservationEvent" and e["tool_name"] == "finish"]
        assert [e["content"] for e in final] == ["all done"]
        assert done["usage"]["llm_calls"] == 2  # the main agent's own two calls


PLANNER = "---\nname: planner\ndescription: Plans and delegates.\ntools: [task_tool_set]\n---\nDelegate.\n"


async def test_a_subagent_delegating_again_is_a_sub_agent_of_that_sub_agent(tmp_path: Path) -> None:
    async with openhands_server(tmp_path, "depth_two") as oh:
        (oh.workspace / ".agents/agents/planner.md").write_text(PLANNER)
        info = await create(oh.server, agent=oh.agent(), workspace=str(oh.workspace), initial_message="Go.")
        done = await wait_for_status(oh.server.client, info["id"], {"finished", "error"}, timeout=180)
        assert done["status"] == "finished", done

        subagents = {s["description"]: s for s in (await oh.server.client.get(f"/api/conversations/{info['id']}/subagents")).json()}
        assert {d: s["status"] for d, s in subagents.items()} == {"plan": "completed", "inner": "completed"}
        assert subagents["inner"]["parent_subagent_id"] == subagents["plan"]["subagent_id"]
        planner = await all_events(oh.server, info["id"], parent_tool_use_id=subagents["plan"]["parent_tool_use_id"])
        inner_call = subagents["inner"]["parent_tool_use_id"]
        assert [e["content"] for e in planner if e["kind"] == "ObservationEvent" and e["tool_call_id"] == inner_call] == ["inner done"]
        inner = await all_events(oh.server, info["id"], parent_tool_use_id=inner_call)
        assert inner[-1]["kind"] == "SubagentFinishedEvent" and inner[-1]["result"] == "inner done"
