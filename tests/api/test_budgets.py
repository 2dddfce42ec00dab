"""Budgets: a sub-agent that passes its type's budget stops at once and its parent reads why,
while a parallel sibling goes on; a root that passes its own stops its whole tree and is paused
with a reason; a budget its backend cannot be held to is refused when created."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.acp.helpers import fake_agent
from tests.api.helpers import all_events, create
from tests.api.steering import USAGE, gate_command, gated_tree, user_texts
from tests.servers import isolated_settings, taskwire_server, wait_for_status

BOUNDED = "Bounded work."
SIBLING = "Sibling work."
CALL_TOKENS = USAGE["input_tokens"] + USAGE["output_tokens"] + USAGE["cache_read_tokens"]  # 1300 a call


def turn(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": list(calls), "usage": USAGE}


def think(n: int) -> dict[str, Any]:
    return turn({"name": "think", "arguments": {"thought": f"thought {n}"}})


def finish(text: str) -> dict[str, Any]:
    return turn({"name": "finish", "arguments": {"message": text}})


def two_task_script(bounded_turns: list[dict[str, Any]], sibling_gate: Path, bounded_type: str = "bounded") -> dict[str, Any]:
    """Main runs a bounded task and a sibling in parallel; the sibling waits at ``sibling_gate``."""
    tasks = [
        {"name": "task", "arguments": {"description": "Bounded", "prompt": BOUNDED, "subagent_type": bounded_type}},
        {"name": "task", "arguments": {"description": "Sibling", "prompt": SIBLING, "subagent_type": "general-purpose"}},
    ]
    return {"lanes": [
        {"name": "bounded", "match": {"first_user_ends_with": BOUNDED}, "optional": True, "turns": bounded_turns},
        {"name": "sibling", "match": {"first_user_ends_with": SIBLING}, "optional": True, "turns": [
            turn({"name": "terminal", "arguments": {"command": gate_command(sibling_gate)}}), finish("sibling done")]},
        {"name": "main", "turns": [turn(*tasks), finish("main done")]},
    ]}


def bounded_type(workspace: Path, **budget: Any) -> None:
    folder = workspace / ".agents" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    front = "\n".join(f"{k}: {v}" for k, v in budget.items())
    (folder / "bounded.md").write_text(f"---\nname: bounded\ndescription: A bounded helper.\n{front}\n---\nWork within your budget.\n")


async def finished_events(server: Any, cid: str) -> dict[str, dict[str, Any]]:
    """Each sub-agent's ``SubagentFinishedEvent``, by its prompt's lane (``bounded``/``sibling``)."""
    found = {}
    for entry in (await server.client.get(f"/api/conversations/{cid}/subagents")).json():
        events = await all_events(server, cid, subagent_id=entry["subagent_id"])
        ends = [e for e in events if e["kind"] == "SubagentFinishedEvent"]
        found["bounded" if entry["description"] == "Bounded" else "sibling"] = {**(ends[-1] if ends else {}), "entry": entry}
    return found


async def wait_for_end(server: Any, cid: str, lane: str) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + 60
    while True:
        ends = await finished_events(server, cid)
        if lane in ends and "status" in ends[lane]:
            # Listed again: the record is written before the event, so this listing has it.
            return (await finished_events(server, cid))[lane]
        assert asyncio.get_running_loop().time() < deadline, f"the {lane} sub-agent never ended"
        await asyncio.sleep(0.05)


SUBAGENT_LIMITS = [
    # (front matter, what the bounded sub-agent does, the limit, what was used when it stopped)
    ({"max_tokens": 2000}, [think(1), think(2), think(3), finish("bounded done")], "max_tokens", 2 * CALL_TOKENS),
    ({"max_cost_usd": 0.0003}, [think(1), think(2), think(3), think(4), finish("bounded done")], "max_cost_usd", None),
    ({"max_iterations": 2}, [think(1), think(2), think(3), finish("bounded done")], "max_iterations", 2),
]


@pytest.mark.parametrize("budget,turns,limit,used", SUBAGENT_LIMITS, ids=[case[2] for case in SUBAGENT_LIMITS])
async def test_a_subagent_past_its_budget_stops_and_its_sibling_goes_on(
    tmp_path: Path, budget: dict[str, Any], turns: list[dict[str, Any]], limit: str, used: float | None
) -> None:
    workspace = tmp_path / "project"
    bounded_type(workspace, **budget)
    sibling_gate = tmp_path / "sibling-gate"
    async with gated_tree(tmp_path, two_task_script(turns, sibling_gate), forward_subagent_events=True) as tree:
        server = tree.server
        cid = (await create(server, agent=tree.agent(), initial_message="Main work.", workspace=str(workspace)))["id"]
        bounded = await wait_for_end(server, cid, "bounded")
        assert bounded["status"] == "error" and bounded["stop_reason"] == limit
        assert bounded["budget"]["limit"] == limit and bounded["budget"]["set_on"] == bounded["entry"]["subagent_id"]
        if used is not None:
            assert bounded["budget"]["used"] == used
        assert bounded["budget"]["used"] >= bounded["budget"]["max"]
        assert bounded["entry"]["stop_reason"] == limit
        # The sibling still runs: it waits at its gate, untouched.
        ends = await finished_events(server, cid)
        assert ends["sibling"]["entry"]["status"] == "running"
        sibling_gate.touch()
        assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] == "finished"
        ends = await finished_events(server, cid)
        assert ends["sibling"]["status"] == "completed" and "stop_reason" not in ends["sibling"]

        # It stopped at once: nothing its last answer asked for ran; the parent model read why.
        bounded_events = await all_events(server, cid, subagent_id=bounded["entry"]["subagent_id"])
        thoughts = [e for e in bounded_events if e["kind"] == "ObservationEvent" and e["tool_name"] == "think"]
        if limit == "max_tokens":
            assert len(thoughts) == 1  # the second call passed the budget: its think never ran
        main_second = [b for b in tree.requests() if user_texts(b)[:1] == ["Main work."]][1]
        results = [m["content"] for m in main_second["messages"] if m["role"] == "tool"]
        assert any(f"stopped by a budget: {limit}" in r for r in results), results
        assert any("Sibling" not in r and "unfinished" in r for r in results)


ROOT_LIMITS = [
    ({"max_tokens": 4000}, "max_tokens"),  # 3 calls fit (3,900 tokens), the 4th passes it
    ({"max_cost_usd": 0.0008}, "max_cost_usd"),  # 3 calls cost $0.000675, 4 $0.0009
    ({"max_seconds": 1.0}, "max_seconds"),
]


async def both_at_their_gates(server: Any, cid: str) -> dict[str, str]:
    """Wait until both sub-agents run their terminal call; their ids by lane."""
    deadline = asyncio.get_running_loop().time() + 60
    while True:
        ends = await finished_events(server, cid)
        waiting = {}
        for lane, end in ends.items():
            events = await all_events(server, cid, subagent_id=end["entry"]["subagent_id"])
            if any(e["kind"] == "ActionEvent" and e["tool_name"] == "terminal" for e in events):
                waiting[lane] = end["entry"]["subagent_id"]
        if len(waiting) == 2:
            return waiting
        assert asyncio.get_running_loop().time() < deadline, "the sub-agents never reached their gates"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("budget,limit", ROOT_LIMITS, ids=[case[1] for case in ROOT_LIMITS])
async def test_a_root_past_its_budget_stops_its_whole_tree_and_pauses(tmp_path: Path, budget: dict[str, Any], limit: str) -> None:
    sibling_gate, bounded_gate = tmp_path / "sibling-gate", tmp_path / "bounded-gate"
    # Both sub-agents wait at a gate (3 calls so far); the bounded one's then thinks on, and its
    # next call passes the root's budget (max_seconds: neither gate opens, the clock runs out).
    turns = [turn({"name": "terminal", "arguments": {"command": gate_command(bounded_gate)}})] + [think(n) for n in range(1, 9)]
    async with gated_tree(tmp_path, two_task_script(turns, sibling_gate, "general-purpose"), forward_subagent_events=True) as tree:
        server = tree.server
        cid = await tree.start(**budget)
        await both_at_their_gates(server, cid)
        if limit != "max_seconds":
            bounded_gate.touch()
        info = await wait_for_status(server.client, cid, {"paused", "finished", "error"})
        assert info["status"] == "paused", info
        assert info["status_reason"].startswith(f"{limit} budget passed: ")
        ends = await finished_events(server, cid)
        for lane in ("bounded", "sibling"):
            # Stopped from above: cancelled with the root's run, the root's limit named.
            assert ends[lane]["stop_reason"] == limit and ends[lane]["budget"]["set_on"] == cid, ends[lane]
            assert ends[lane]["status"] in ("cancelled", "error") and "stopped by a budget" in ends[lane]["result"]
        # The sibling's terminal call ran and was cut: closed honestly, as failed.
        sibling_events = await all_events(server, cid, subagent_id=ends["sibling"]["entry"]["subagent_id"])
        terminal = [e for e in sibling_events if e["kind"] == "ObservationEvent" and e["tool_name"] == "terminal"]
        assert [(t["status"], t["is_error"]) for t in terminal] == [("failed", True)]
        # The root's own task calls are closed too, and its stream says why it paused.
        own = await all_events(server, cid)
        statuses = [e for e in own if e.get("key") == "status"]
        assert statuses[-1]["value"] == "paused" and statuses[-1].get("reason") == info["status_reason"], statuses
        task_results = [e for e in own if e["kind"] == "ObservationEvent" and e["tool_name"] == "task"]
        assert len(task_results) == 2 and all(r["is_error"] for r in task_results)
        calls = sum(e["usage"]["llm_calls"] for e in (await server.client.get(f"/api/conversations/{cid}/subagents")).json())
        assert calls == (2 if limit == "max_seconds" else 3)  # nothing ran past the crossing


async def test_cancel_and_interrupt_under_a_budget_stop_nothing_by_the_budget(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    bounded_type(workspace, max_tokens=1_000_000, max_seconds=600)
    sibling_gate = tmp_path / "sibling-gate"
    gate = tmp_path / "gate"
    turns = [turn({"name": "terminal", "arguments": {"command": gate_command(gate)}}), finish("bounded done")]
    async with gated_tree(tmp_path, two_task_script(turns, sibling_gate), forward_subagent_events=True) as tree:
        server = tree.server
        cid = (await create(server, agent=tree.agent(max_tokens=1_000_000), initial_message="Main work.",
                            workspace=str(workspace)))["id"]
        while len((await server.client.get(f"/api/conversations/{cid}/subagents")).json()) < 2:
            await asyncio.sleep(0.05)
        ends = await finished_events(server, cid)
        sid = ends["bounded"]["entry"]["subagent_id"]
        assert (await server.client.post(f"/api/conversations/{cid}/subagents/{sid}/cancel")).status_code == 202
        bounded = await wait_for_end(server, cid, "bounded")
        assert bounded["status"] == "cancelled" and "stop_reason" not in bounded
        assert (await server.client.post(f"/api/conversations/{cid}/interrupt")).status_code == 200
        info = await wait_for_status(server.client, cid, {"paused"})
        assert info["status_reason"] is None
        sibling = (await finished_events(server, cid))["sibling"]
        assert sibling["status"] == "cancelled" and "stop_reason" not in sibling


async def test_a_budget_that_cannot_be_checked_is_refused_at_creation(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        cases = [
            ({**fake_agent(tmp_path), "max_tokens": 1000}, "an acp agent reports its usage only when its turn ends"),
            ({**fake_agent(tmp_path), "max_cost_usd": 1}, "an acp agent reports its usage only when its turn ends"),
            ({"kind": "claude_sdk", "max_iterations": 3}, "Claude Code counts its own turns"),
            ({"kind": "native", "llm": {"api": "openai", "model": "house-model-7", "base_url": "http://127.0.0.1:9/v1"},
              "max_cost_usd": 0.5}, "no price for model 'house-model-7'"),
        ]
        for agent, why in cases:
            response = await server.client.post("/api/conversations", json={"agent": agent})
            assert response.status_code == 400, response.text
            assert response.json()["code"] == "budget_not_checkable" and why in response.json()["detail"]
        # Checkable ones are taken: seconds on any backend, tokens on a native agent.
        for agent in ({**fake_agent(tmp_path), "max_seconds": 30}, {"kind": "native", "max_tokens": 10, "max_seconds": 5}):
            assert (await server.client.post("/api/conversations", json={"agent": agent})).status_code == 201
        for bad in ({"max_tokens": 0}, {"max_cost_usd": -1}, {"max_seconds": "soon"}, {"max_tokens": 1.5}):
            response = await server.client.post("/api/conversations", json={"agent": {"kind": "native", **bad}})
            assert response.status_code == 422, bad


async def test_a_subagent_type_whose_backend_cannot_be_bounded_is_an_error_result(tmp_path: Path) -> None:
    """A root's token budget over a sub-agent type that runs an ACP agent: the task call is
    refused with the reason, and the parent goes on."""
    workspace = tmp_path / "project"
    folder = workspace / ".agents" / "agents"
    folder.mkdir(parents=True)
    spec = json.dumps(fake_agent(tmp_path))
    (folder / "peer.md").write_text(f"---\nname: peer\ndescription: x\nagent: {spec}\n---\nBe a peer.\n")
    script = {"lanes": [{"name": "main", "turns": [
        turn({"name": "task", "arguments": {"description": "Peer", "prompt": "Peer work.", "subagent_type": "peer"}}),
        finish("main done")]}]}
    async with gated_tree(tmp_path, script) as tree:
        server = tree.server
        cid = (await create(server, agent=tree.agent(max_tokens=100_000), initial_message="Main work.",
                            workspace=str(workspace)))["id"]
        assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] == "finished"
        [result] = [e for e in await all_events(server, cid) if e["kind"] == "ObservationEvent" and e["tool_name"] == "task"]
        assert result["is_error"] and "cannot run here: max_tokens cannot be checked" in result["content"]
        assert (await server.client.get(f"/api/conversations/{cid}/subagents")).json() == []


async def test_a_roots_budget_counts_what_its_tree_spent_before_it_was_loaded(tmp_path: Path) -> None:
    """Spent tokens are the tree's, stored: a root unloaded (or the server restarted) between
    runs still counts them, and the call that passes the budget is not acted on."""
    script = {"lanes": [{"name": "main", "turns": [{"text": "first answer", "usage": USAGE},
                                                    {"text": "second answer", "usage": USAGE}]}]}
    async with gated_tree(tmp_path, script) as tree:
        server = tree.server
        cid = await tree.start("One.", max_tokens=2000)
        assert (await wait_for_status(server.client, cid, {"finished", "paused", "error"}))["status"] == "finished"
        await server.runtime.unload(cid)
        assert (await server.client.post(f"/api/conversations/{cid}/events", json={"content": "Two."})).status_code == 202
        info = await wait_for_status(server.client, cid, {"finished", "paused", "error"})
        assert info["status"] == "paused" and info["status_reason"] == "max_tokens budget passed: 2600 tokens used of 2000 tokens"
        answers = [e["content"] for e in await all_events(server, cid, kind="MessageEvent", source="agent")]
        assert answers == ["first answer"]  # the answer that passed it was never recorded as said
        assert info["usage"]["llm_calls"] == 2  # but its tokens were


async def test_a_subagent_past_its_max_seconds_stops_mid_call_and_its_sibling_goes_on(tmp_path: Path) -> None:
    """The clock stops a sub-agent whose command never ends: the command's call, which ran, is
    closed ``failed``; the parent reads why; the sibling finishes its work afterwards."""
    workspace = tmp_path / "project"
    bounded_type(workspace, max_seconds=1)
    never, sibling_gate = tmp_path / "never", tmp_path / "sibling-gate"
    turns = [turn({"name": "terminal", "arguments": {"command": gate_command(never)}}), finish("bounded done")]
    async with gated_tree(tmp_path, two_task_script(turns, sibling_gate), forward_subagent_events=True) as tree:
        server = tree.server
        cid = (await create(server, agent=tree.agent(), initial_message="Main work.", workspace=str(workspace)))["id"]
        bounded = await wait_for_end(server, cid, "bounded")
        assert bounded["status"] == "error" and bounded["stop_reason"] == "max_seconds"
        assert bounded["budget"]["max"] == 1 and bounded["budget"]["used"] >= 1
        events = await all_events(server, cid, subagent_id=bounded["entry"]["subagent_id"])
        closed = [(e["status"], e["is_error"]) for e in events if e["kind"] == "ObservationEvent"]
        assert closed == [("failed", True)]
        assert (await finished_events(server, cid))["sibling"]["entry"]["status"] == "running"
        sibling_gate.touch()
        assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] == "finished"
        assert (await finished_events(server, cid))["sibling"]["status"] == "completed"
        never.touch()
