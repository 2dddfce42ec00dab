"""Recorded OpenHands 1.58.2 runs through the dispatcher: each sub-conversation becomes a
sub-agent under the ``task`` call that spawned it, its events land in its own lane, and the
main agent's lane holds only the main agent's own calls."""

from __future__ import annotations

from taskwire.openhands.dispatch import ROOT, OpenHandsDispatcher
from taskwire.openhands.protocol import Report
from tests.openhands.recorded import HERE, ActionLog, driver_reports, fixture_reports


def feed_all(reports: list[Report]) -> tuple[OpenHandsDispatcher, ActionLog]:
    dispatcher, log = OpenHandsDispatcher(), ActionLog()
    for report in reports:
        log.add(dispatcher.feed(report))
    return dispatcher, log


def test_shared_fixture_two_parallel_subagents_each_get_their_own_lane() -> None:
    dispatcher, log = feed_all(fixture_reports(HERE / "two_subagents.events.jsonl"))

    assert set(log.started()) == {"call_A", "call_B"}
    assert {lane: s.subagent_type for lane, s in log.started().items()} == {"call_A": "worker", "call_B": "worker"}
    assert {lane: s.parent for lane, s in log.started().items()} == {"call_A": ROOT, "call_B": ROOT}
    assert {lane: (f.status, f.result) for lane, f in log.finished().items()} == {
        "call_A": ("completed", "result of alpha"), "call_B": ("completed", "result of beta")}
    # The sub-agent's prompt is its first user message; then its think / finish calls.
    assert log.kinds("call_A") == ["StartLane", "MessageEvent", "ActionEvent", "ObservationEvent",
                                   "ActionEvent", "ObservationEvent", "FinishLane"]
    assert log.events("call_A")[0].role == "user"
    root_calls = [e.tool_call_id for e in log.events(ROOT) if e.kind == "ActionEvent"]
    assert root_calls == ["call_A", "call_B", "call_F"]
    results = {e.tool_call_id: e.content for e in log.events(ROOT) if e.kind == "ObservationEvent"}
    assert results == {"call_A": "result of alpha", "call_B": "result of beta", "call_F": "main done"}
    assert dispatcher.ignored == 0


def test_driver_run_three_subagents_results_arrive_as_each_ends_not_with_the_slowest() -> None:
    dispatcher, log = feed_all(driver_reports(HERE / "three_subagents.driver.jsonl"))

    calls = ["call_main_0_0", "call_main_0_1", "call_main_0_2"]
    assert {lane: s.subagent_type for lane, s in log.started().items()} == {
        "call_main_0_0": "reviewer", "call_main_0_1": "general-purpose", "call_main_0_2": "reviewer"}
    assert {lane: f.result for lane, f in log.finished().items()} == {
        "call_main_0_0": "alpha done", "call_main_0_1": "beta done", "call_main_0_2": "gamma done"}
    # gamma's result reaches the main agent's stream before beta (the slowest) has even started.
    order = [(type(a).__name__, getattr(a, "lane", None), getattr(getattr(a, "event", None), "tool_call_id", None))
             for a in log.order]
    assert order.index(("Emit", ROOT, "call_main_0_2")) < order.index(("StartLane", "call_main_0_1", None))
    # OpenHands' own, later copies of the three observations are not repeated.
    task_results = [e.tool_call_id for e in log.events(ROOT) if e.kind == "ObservationEvent" and e.tool_name == "task"]
    assert sorted(task_results) == calls
    assert all(f.usage is not None and f.usage.llm_calls >= 1 for f in log.finished().values())
    assert [(r.status, r.answer) for r in log.run_ends()] == [("finished", "all done")]
    assert dispatcher.ignored == 0


def test_closing_mid_delegation_cancels_open_subagents_and_fails_their_calls() -> None:
    reports = driver_reports(HERE / "three_subagents.driver.jsonl")
    cut = next(i for i, r in enumerate(reports) if r.type == "task_result")
    dispatcher, log = feed_all(reports[:cut])

    closing = ActionLog()
    closing.add(dispatcher.close("the run was interrupted"))

    assert {lane: f.status for lane, f in closing.finished().items()} == {
        "call_main_0_0": "cancelled", "call_main_0_2": "cancelled"}
    closed = {e.tool_call_id: e.status for e in closing.events(ROOT)}
    # beta never started (no event of it yet): its call is still closed, as one that ran.
    assert closed == dict.fromkeys(["call_main_0_0", "call_main_0_1", "call_main_0_2"], "failed")
    assert [e.status for e in closing.events("call_main_0_0")] == []  # its think call had ended
    assert dispatcher.feed(reports[cut]) == []  # a late result of a closed sub-agent is dropped
