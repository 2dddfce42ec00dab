"""The real AG-UI client (``HttpAgent.runAgent`` from @ag-ui/client 1.0.0, its own verification
on) against a real server running two sub-agents in parallel, the first with one of its own."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from tests.agui.client import assert_accepted, events, of_type, run_client
from tests.api.helpers import all_events, scripted_agent
from tests.servers import REPO, RunningServer, isolated_settings, taskwire_server

SCRIPT = str(REPO / "config" / "demo" / "parallel_nested.yaml")
ANSWER = "Done: nested-leaf (two levels down) and subagent-b were echoed."
RUN_SCOPED = {"RUN_STARTED", "RUN_FINISHED", "RUN_ERROR"}


def run_step(thread: str) -> dict[str, Any]:
    """A run that creates the thread with the agent named in ``forwardedProps``."""
    agent = scripted_agent(SCRIPT)
    return {"op": "run", "threadId": thread, "runId": "run-1", "message": "Go.", "forwardedProps": {"taskwire": {"agent": agent}}}


async def owners(server: RunningServer, thread: str, subagents: list[dict[str, Any]]) -> dict[str, str | None]:
    """Which stream each stored tool call and message belongs to (by the ids AG-UI events
    carry: ``toolCallId`` and ``messageId``): ``None`` for the root, else the sub-agent."""
    found: dict[str, str | None] = {}
    for stream in [None, *(s["subagent_id"] for s in subagents)]:
        for event in await all_events(server, stream or thread):
            found[event["id"]] = stream
            if "tool_call_id" in event:
                found[event["tool_call_id"]] = stream
    return found


async def test_each_subagents_events_carry_its_run_id_and_each_start_names_its_spawning_call(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        thread = str(uuid.uuid4())
        (step,) = await run_client(server, run_step(thread))
        subagents = (await server.client.get(f"/api/conversations/{thread}/subagents")).json()
        owner_of = await owners(server, thread, subagents)

    assert_accepted(step)
    sent = events(step)
    assert sent[0] == {"type": "RUN_STARTED", "threadId": thread, "runId": "run-1"}
    assert sent[-1]["type"] == "RUN_FINISHED" and sent[-1]["outcome"] == {"type": "success"}
    assert step["result"] == ANSWER

    by_call = {s["parent_tool_use_id"]: s for s in subagents}
    assert set(by_call) == {"call_main_0_0", "call_main_0_1", "call_subagent-a_0_0"}
    nested, first = by_call["call_subagent-a_0_0"], by_call["call_main_0_0"]
    assert nested["parent_subagent_id"] == first["subagent_id"]
    starts = {e["subagentRunId"]: e for e in of_type(sent, "SUBAGENT_STARTED")}
    assert starts == {
        s["subagent_id"]: {
            "type": "SUBAGENT_STARTED", "subagentRunId": s["subagent_id"], "name": "general-purpose",
            "description": s["description"], "parentToolCallId": s["parent_tool_use_id"],
            **({"parentSubagentRunId": s["parent_subagent_id"]} if s["parent_subagent_id"] else {}),
            "metadata": {"taskwire": {"label": s["label"], "seq": starts[s["subagent_id"]]["metadata"]["taskwire"]["seq"]}},
            "timestamp": starts[s["subagent_id"]]["timestamp"],
        }
        for s in subagents
    }
    # A nested sub-agent starts after its parent, and each ends once, after it started.
    order = [e["subagentRunId"] for e in sent if e["type"].startswith("SUBAGENT_")]
    assert order.index(first["subagent_id"]) < order.index(nested["subagent_id"])
    assert sorted(e["subagentRunId"] for e in of_type(sent, "SUBAGENT_FINISHED")) == sorted(starts)

    # Every event made from a stored record carries the stamp of the stream that holds it.
    checked = {stream: 0 for stream in [None, *starts]}
    for event in sent:
        origin = event.get("toolCallId") or event.get("messageId")
        if event["type"] in RUN_SCOPED or origin not in owner_of:
            continue
        assert event.get("subagentRunId") == owner_of[origin], event
        checked[owner_of[origin]] += 1
    assert all(checked.values()), checked  # the root and all three sub-agents were seen
    assert all(e["subagentRunId"] in starts for e in sent if "subagentRunId" in e)
    assert not any("subagentRunId" in e for e in sent if e["type"] in RUN_SCOPED)
    # The client's pipeline passed every event on with the same attribution, and the seq to
    # resume after, which it read from the events themselves.
    assert step["lastSeq"] == int(step["frames"][-1]["id"])
    assert [e.get("subagentRunId") for e in step["received"]] == [e.get("subagentRunId") for e in sent]
    # ... and files the nested sub-agent's tool result under it in its message history.
    leaf_results = [m for m in step["newMessages"] if m["role"] == "tool" and m.get("subagentRunId") == nested["subagent_id"]]
    assert leaf_results and all(m["toolCallId"].startswith("call_leaf_") for m in leaf_results)


async def test_with_forwarding_off_the_stream_holds_the_parents_own_events_and_nothing_stamped(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        thread = str(uuid.uuid4())
        (step,) = await run_client(server, run_step(thread))
        root_calls = {e["tool_call_id"] for e in await all_events(server, thread) if e["kind"] == "ActionEvent"}

    assert_accepted(step)
    sent = events(step)
    assert not any("subagentRunId" in e for e in sent)
    assert not of_type(sent, "SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR")
    started = {e["toolCallId"] for e in of_type(sent, "TOOL_CALL_START")}
    answered = {e["toolCallId"] for e in of_type(sent, "TOOL_CALL_RESULT")}
    assert started == answered == root_calls == {"call_main_0_0", "call_main_0_1"}  # the two task calls
    assert step["result"] == ANSWER
