"""AG-UI interrupts, with the real client (@ag-ui/client's ``HttpAgent``, its coverage check
and verification on): a sub-agent's permission request ends the AG-UI run with the interrupt
outcome, stamped with the sub-agent; ``resume`` allowing runs the tool, ``resume`` rejecting
reaches the model with the reason; invalid resumes are clear 4xx."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx

from taskwire.llm.mock_server import create_mock_app
from tests.agui.client import assert_accepted, events, of_type, run_client
from tests.agui.sse_client import read_all, run_input
from tests.agui.test_routes import assert_error
from tests.permissions.helpers import finish, lane, task, terminal, wait_pending
from tests.permissions.test_tree import model_requests, tool_results
from tests.servers import RunningServer, isolated_settings, serve_app, taskwire_server

SCRIPT = json.dumps({"strict": True, "lanes": [
    lane("sub-a", "Work A.", {"tool_calls": [terminal("echo from-a")]}, {"tool_calls": [terminal("echo second")]},
         {"tool_calls": [finish("a done")]}),
    lane("main", None, {"tool_calls": [task("Work A", "Work A.")]}, {"tool_calls": [finish("all done")]}),
]})
ALLOW_FROM_A = {"match": {"metadata": {"taskwire": {"title": "echo from-a"}}}, "payload": {"optionId": "allow_once"}}
REJECT_SECOND = {"match": {"metadata": {"taskwire": {"title": "echo second"}}},
                 "payload": {"decision": "reject", "reason": "not twice"}}


def asking_agent(mock_url: str) -> dict[str, Any]:
    return {"kind": "native", "approval": "always",
            "llm": {"api": "openai", "model": "mock", "base_url": f"{mock_url}/v1", "api_key": "k"}}


async def ask_allow_reject(server: RunningServer, mock_url: str, thread: str) -> list[dict[str, Any]]:
    """Three runs of the real client on one thread: "Go." (sub-agent A asks), a resume allowing
    ``echo from-a`` (A then asks for ``echo second``), a resume rejecting that; each accepted."""
    props = {"taskwire": {"agent": asking_agent(mock_url)}}
    steps = await run_client(
        server,
        {"op": "run", "threadId": thread, "runId": "run-1", "message": "Go.", "forwardedProps": props},
        {"op": "run", "threadId": thread, "runId": "run-2", "answer": [ALLOW_FROM_A]},
        {"op": "run", "threadId": thread, "runId": "run-3", "answer": [REJECT_SECOND]},
    )
    for step in steps:
        assert_accepted(step)
    return steps


def interrupted(step: dict[str, Any]) -> list[dict[str, Any]]:
    """The interrupts the step's run ended with."""
    end = events(step)[-1]
    assert end["type"] == "RUN_FINISHED" and end["outcome"]["type"] == "interrupt", end
    return end["outcome"]["interrupts"]


async def test_a_subagents_request_interrupts_the_run_and_resume_answers_it(tmp_path: Path) -> None:
    log = tmp_path / "model.jsonl"
    thread = str(uuid.uuid4())
    async with serve_app(create_mock_app(SCRIPT, log_path=log)) as mock_url, \
            taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        first, allowed, rejected = await ask_allow_reject(server, mock_url, thread)
        [sub] = (await server.client.get(f"/api/conversations/{thread}/subagents")).json()
        listed = {p["title"]: p for p in (await server.client.get(f"/api/conversations/{thread}/permissions",
                                                                  params={"status": "all"})).json()}
    # Run 1 ends on the sub-agent's request: its id, its call, its sub-agent, what it offers.
    [raised] = interrupted(first)
    request = listed["echo from-a"]
    assert raised["id"] == request["request_id"] and raised["toolCallId"] == request["tool_call_id"]
    assert raised["subagentRunId"] == sub["subagent_id"] and raised["reason"] == "tool_approval"
    assert raised["metadata"]["taskwire"]["parentToolUseId"] == sub["parent_tool_use_id"]
    assert raised["responseSchema"]["properties"]["optionId"]["enum"] == ["allow_once", "allow_always", "reject_once"]
    started = {e["toolCallId"]: e for e in of_type(events(first), "TOOL_CALL_START")}
    assert started[raised["toolCallId"]]["subagentRunId"] == sub["subagent_id"]
    [suspended] = [e for e in of_type(events(first), "SUBAGENT_FINISHED") if e["subagentRunId"] == sub["subagent_id"]]
    assert suspended["outcome"] == {"type": "suspended", "interruptIds": [raised["id"]]}
    assert [i["id"] for i in first["pendingInterrupts"]] == [raised["id"]]  # the client holds it
    # Run 2 answers it (allow): the tool runs in that run, then the sub-agent's next call asks.
    assert allowed["resume"] == [{"interruptId": raised["id"], "status": "resolved", "payload": {"optionId": "allow_once"}}]
    results = {e["toolCallId"]: e for e in of_type(events(allowed), "TOOL_CALL_RESULT")}
    assert "from-a" in results[raised["toolCallId"]]["content"]
    [second] = interrupted(allowed)
    assert second["id"] == listed["echo second"]["request_id"] and second["subagentRunId"] == sub["subagent_id"]
    # Run 3 rejects it with a reason: the model reads the refusal, and the run finishes.
    assert events(rejected)[-1]["outcome"] == {"type": "success"} and rejected["result"] == "all done"
    assert rejected["pendingInterrupts"] == []
    refused = tool_results(model_requests(log, "sub-a", 2)[0])[second["toolCallId"]]
    assert "rejected" in refused and "not twice" in refused
    assert {(p["status"], p["resolution"]["answered_by"]) for p in listed.values()} == {("allowed", "agui"), ("rejected", "agui")}
    assert listed["echo second"]["resolution"]["reason"] == "not twice"


async def test_invalid_resumes_are_clear_4xx(tmp_path: Path) -> None:
    thread = str(uuid.uuid4())
    async with serve_app(create_mock_app(SCRIPT)) as mock_url, \
            taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        client = server.client
        go = run_input(thread, "run-1", "Go.", forwardedProps={"taskwire": {"agent": asking_agent(mock_url)}})
        frames = await read_all(client, "POST", "/agui", json=go)
        [raised] = frames[-1][1]["outcome"]["interrupts"]

        def resume(*entries: dict[str, Any], run: str = "run-2") -> dict[str, Any]:
            return run_input(thread, run, "Go.", resume=list(entries))

        # A new message while the thread waits would leave the interrupt unanswered.
        assert_error(await client.post("/agui", json=run_input(thread, "run-x", "And?")), 409, "interrupts_pending")
        assert_error(await client.post("/agui", json=resume({"interruptId": "nope", "status": "resolved", "payload": "allow_once"})),
                     404, "unknown_interrupt")
        assert_error(await client.post("/agui", json=resume({"interruptId": raised["id"], "status": "resolved"})),
                     422, "invalid_resume")
        assert_error(await client.post("/agui", json=resume({"interruptId": raised["id"], "status": "resolved",
                                                             "payload": {"optionId": "allow_once", "extra": 1}})),
                     422, "invalid_resume")
        assert_error(await client.post("/agui", json=resume({"interruptId": raised["id"], "status": "resolved", "payload": "nope"})),
                     422, "invalid_permission_answer")
        twice = {"interruptId": raised["id"], "status": "cancelled"}
        assert_error(await client.post("/agui", json=resume(twice, twice)), 422, "invalid_resume")
        assert_error(await client.post("/agui", json=run_input(str(uuid.uuid4()), "r", "x", resume=[twice])),
                     404, "conversation_not_found")
        # Abandoning it (cancelled) rejects the call; the next interrupt is the second command's.
        frames = await read_all(client, "POST", "/agui", json=resume(twice))
        end = frames[-1][1]
        assert end["type"] == "RUN_FINISHED" and end["outcome"]["type"] == "interrupt"
        assert [i["metadata"]["taskwire"]["title"] for i in end["outcome"]["interrupts"]] == ["echo second"]
        [first] = [p for p in (await client.get(f"/api/conversations/{thread}/permissions", params={"status": "all"})).json()
                   if p["request_id"] == raised["id"]]
        assert (first["status"], first["resolution"]["answered_by"]) == ("rejected", "agui")
        # Answering it again: it waits on nothing any more.
        assert_error(await client.post("/agui", json=resume({**twice, "status": "resolved", "payload": "allow_once"}, run="run-3")),
                     409, "interrupt_resolved")
        [second] = await wait_pending(server, thread, 1)
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as other:
            assert (await other.get(f"/api/conversations/{thread}")).json()["status"] == "running"
        # Abandoning one that ended is how a consumer moves past it: no error, and the run ends
        # at once, on what still waits.
        frames = await read_all(client, "POST", "/agui", json=resume(twice, run="run-4"))
        assert [e["type"] for _, e in frames] == ["RUN_STARTED", "RUN_FINISHED"]
        assert [i["id"] for i in frames[-1][1]["outcome"]["interrupts"]] == [second["request_id"]]
        assert frames[-1][1]["outcome"]["interrupts"][0]["metadata"]["taskwire"]["options"]
        abandon_second = {"interruptId": second["request_id"], "status": "cancelled", "payload": {"reason": "later"}}
        frames = await read_all(client, "POST", "/agui", json=resume(abandon_second, run="run-5"))
        assert frames[-1][1]["type"] == "RUN_FINISHED" and frames[-1][1]["outcome"] == {"type": "success"}
        # Nothing waits and nothing runs: the run that abandons them again ends at once, a success.
        frames = await read_all(client, "POST", "/agui", json=resume(twice, abandon_second, run="run-6"))
        assert [(e["type"], e.get("outcome")) for _, e in frames] == [("RUN_STARTED", None), ("RUN_FINISHED", {"type": "success"})]


async def test_forwarding_off_the_subagents_request_still_interrupts_and_resumes(tmp_path: Path) -> None:
    thread = str(uuid.uuid4())
    async with serve_app(create_mock_app(SCRIPT)) as mock_url, \
            taskwire_server(isolated_settings(tmp_path, forward_subagent_events=False)) as server:
        first, allowed, rejected = await ask_allow_reject(server, mock_url, thread)
        [sub] = (await server.client.get(f"/api/conversations/{thread}/subagents")).json()
    # Nothing of the sub-agent is in the stream, but the root's waiting set names who asks.
    assert not [e for e in events(first) if e.get("subagentRunId")]
    [raised] = interrupted(first)
    assert raised["subagentRunId"] == sub["subagent_id"] and raised["toolCallId"]
    assert raised["metadata"]["taskwire"]["parentToolUseId"] == sub["parent_tool_use_id"]
    [second] = interrupted(allowed)
    assert second["id"] != raised["id"]
    assert events(rejected)[-1]["outcome"] == {"type": "success"} and rejected["result"] == "all done"
