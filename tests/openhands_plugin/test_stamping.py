"""``taskwire_openhands.stamping`` on openhands-sdk and -tools alone (no agent-server): every
event of every ``task`` sub-agent, at any depth and in parallel, reaches the callback with the
stamp of the call that spawned it; the root's own log holds none of them."""

from __future__ import annotations

import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from tests.openhands_plugin.helpers import run_stamped

CALLS = {"call_main_0_0": ("alpha", "reviewer"), "call_main_0_1": ("beta", "general-purpose"),
         "call_main_0_2": ("gamma", "reviewer")}


def stamped(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for line in lines if line["type"] == "event" and line["stamp"] is not None]


def done(lines: list[dict[str, Any]]) -> dict[str, Any]:
    [last] = [line for line in lines if line["type"] == "done"]
    return last


def by_call(lines: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in stamped(lines):
        grouped[line["stamp"]["parent_tool_use_id"]].append(line)
    return grouped


def assert_not_in_root(lines: list[dict[str, Any]]) -> None:
    """No sub-agent event is in the root's persisted log."""
    root_ids = {e["id"] for e in done(lines)["persisted"]}
    assert not root_ids & {line["event"]["id"] for line in stamped(lines)}


async def test_parallel_subagents_are_stamped_with_the_call_that_spawned_each(tmp_path: Path) -> None:
    lines = await run_stamped(tmp_path, "parallel", tool_concurrency_limit=3)
    assert done(lines)["status"] == "finished"
    calls = by_call(lines)
    assert set(calls) == set(CALLS)
    for call, (description, subagent_type) in CALLS.items():
        stamps = {tuple(sorted((k, str(v)) for k, v in line["stamp"].items())) for line in calls[call]}
        assert len(stamps) == 1, stamps  # one sub-agent, one stamp for all its events
        stamp = calls[call][0]["stamp"]
        assert stamp["ancestry"] == [call] and stamp["depth"] == 1 and stamp["parent_subagent_id"] is None
        assert (stamp["label"], stamp["subagent_type"]) == (description, subagent_type)
        uuid.UUID(stamp["subagent_id"])
        assert Path(stamp["persistence_dir"]).is_dir()
        kinds = [line["event"]["kind"] for line in calls[call]]
        assert kinds[0] == "SystemPromptEvent" and "MessageEvent" in kinds and kinds.count("ActionEvent") >= 1
        assert calls[call][-1]["event"]["kind"] == "ObservationEvent"
    assert len({line["stamp"]["subagent_id"] for line in stamped(lines)}) == 3
    # Parallel: the sub-agents ran on threads of their own.
    assert len({line["thread"] for line in stamped(lines)}) == 3

    # The root's own events reach the callback unstamped; none of the sub-agents' is in its log.
    root_events = [line["event"] for line in lines if line["type"] == "event" and line["stamp"] is None]
    assert [e["id"] for e in root_events] == [e["id"] for e in done(lines)["persisted"]]
    assert_not_in_root(lines)

    ends = {line["call"]["tool_call_id"]: line for line in lines if line["type"] == "task_end"}
    assert set(ends) == set(CALLS)
    assert all(end["has_state"] and not end["is_error"] for end in ends.values())
    assert {c: ends[c]["stamp"]["subagent_id"] for c in CALLS} == {c: calls[c][0]["stamp"]["subagent_id"] for c in CALLS}


async def test_a_subagent_of_a_subagent_carries_the_innermost_call_and_its_chain(tmp_path: Path) -> None:
    lines = await run_stamped(tmp_path, "nested")
    assert done(lines)["status"] == "finished"
    calls = by_call(lines)
    assert set(calls) == {"call_main_0_0", "call_planner_0_0"}
    planner, inner = calls["call_main_0_0"][0]["stamp"], calls["call_planner_0_0"][0]["stamp"]
    assert (planner["depth"], planner["ancestry"], planner["subagent_type"]) == (1, ["call_main_0_0"], "planner")
    assert inner["ancestry"] == ["call_main_0_0", "call_planner_0_0"] and inner["depth"] == 2
    assert inner["parent_subagent_id"] == planner["subagent_id"] and inner["subagent_type"] == "reviewer"
    assert Path(inner["persistence_dir"]).parent.parent == Path(planner["persistence_dir"])
    # Innermost wins: the inner sub-agent's think is only ever reported with its own stamp.
    thoughts = [line for line in stamped(lines) if line["event"].get("tool_name") == "think"
                and line["event"]["kind"] == "ActionEvent"]
    assert [line["stamp"]["parent_tool_use_id"] for line in thoughts] == ["call_planner_0_0"]
    # The planner's own task call and its result are the planner's events.
    planner_kinds = {(line["event"]["kind"], line["event"].get("tool_call_id")) for line in calls["call_main_0_0"]}
    assert {("ActionEvent", "call_planner_0_0"), ("ObservationEvent", "call_planner_0_0")} <= planner_kinds
    assert_not_in_root(lines)


async def test_a_conversation_built_without_a_visualizer_is_stamped_once_attached(tmp_path: Path) -> None:
    # As the agent-server builds them (visualizer=None): the resolver attaches at the first call.
    lines = await run_stamped(tmp_path, "parallel", root="attach")
    assert done(lines)["status"] == "finished"
    assert set(by_call(lines)) == set(CALLS)
    assert not [line for line in lines if line["type"] == "event" and line["stamp"] is None]
    assert_not_in_root(lines)


async def test_a_resumed_task_is_forwarded_under_the_resuming_call_as_the_same_subagent(tmp_path: Path) -> None:
    lines = await run_stamped(tmp_path, "resume")
    assert done(lines)["status"] == "finished"
    calls = by_call(lines)
    assert set(calls) == {"call_main_0_0", "call_main_1_0"}
    first, resumed = calls["call_main_0_0"][0]["stamp"], calls["call_main_1_0"][0]["stamp"]
    assert resumed["subagent_id"] == first["subagent_id"] and resumed["label"] == "alpha again"
    events = [line["event"] for line in calls["call_main_1_0"]]
    texts = [e for e in events if e["kind"] == "MessageEvent"]
    assert "Go on with it" in str(texts[0]["llm_message"])
    assert [e["action"]["thought"] for e in events if e["kind"] == "ActionEvent" and e["tool_name"] == "think"] == ["alpha resumed"]
    assert not {e["id"] for e in events} & {line["event"]["id"] for line in calls["call_main_0_0"]}
    [end] = [line for line in lines if line["type"] == "task_end" and line["call"]["tool_call_id"] == "call_main_1_0"]
    assert end["call"]["resume"] == "task_00000001" and end["text"] == "alpha done again"
    assert_not_in_root(lines)


async def test_a_resumed_task_can_be_refused_with_an_answer_the_model_reads(tmp_path: Path) -> None:
    lines = await run_stamped(tmp_path, "resume_refused", resume="refuse")
    assert done(lines)["status"] == "finished"
    assert set(by_call(lines)) == {"call_main_0_0"}
    [end] = [line for line in lines if line["type"] == "task_end" and line["call"]["tool_call_id"] == "call_main_1_0"]
    assert end["is_error"] and "resume is not supported" in end["text"] and end["stamp"] is None


async def test_a_callback_that_raises_never_stops_the_agents(tmp_path: Path) -> None:
    lines = await run_stamped(tmp_path, "nested", raise_in_callback=True)
    assert done(lines)["status"] == "finished"
    assert set(by_call(lines)) == {"call_main_0_0", "call_planner_0_0"}


async def test_a_resolver_that_raises_leaves_the_calls_to_run_unstamped(tmp_path: Path) -> None:
    lines = await run_stamped(tmp_path, "parallel", root="attach", raise_in_resolver=True)
    assert done(lines)["status"] == "finished"
    assert not stamped(lines) and not [line for line in lines if line["type"] == "task_end"]
    results = [e for e in done(lines)["persisted"] if e["kind"] == "ObservationEvent" and e["tool_name"] == "task"]
    assert len(results) == 3 and not [e for e in results if e["observation"].get("is_error")]
