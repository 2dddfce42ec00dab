"""Interrupts in the AG-UI projection, without I/O: the root's waiting set ends the run with
the interrupt outcome (after the run's own message), a resume's own requests are not raised
again, and what the run left open is closed first."""

from __future__ import annotations

from typing import Any

from taskwire.agui import AguiProjection
from taskwire.events import ActionEvent, ConversationStateUpdateEvent, MessageEvent, PermissionRequestEvent
from taskwire.permissions.requests import NATIVE_OPTIONS
from tests.agui.checks import Log, assert_valid

THREAD = "thread-1"


def pending(*entries: dict[str, Any]) -> ConversationStateUpdateEvent:
    return ConversationStateUpdateEvent(key="pending_permissions", value=list(entries))


def entry(request_id: str, call: str, **stamp: str) -> dict[str, Any]:
    return {"request_id": request_id, "tool_call_id": call, "tool_name": "terminal", "title": "echo hi", **stamp}


def events(projection: AguiProjection, *records: str) -> list[dict[str, Any]]:
    return [event for record in records for _, event in projection.receive(record)]


def test_the_main_agents_request_ends_the_run_after_its_message_with_the_interrupt_outcome() -> None:
    log, projection = Log(), AguiProjection(THREAD, run_id="run-1", sent_message="Go.")
    out = [e for _, e in projection.start_run("run-1")]
    # A waiting set seen before the run's own message belongs to an earlier turn: no end yet.
    out += events(projection, log(pending(entry("r0", "c0"))))
    assert projection.run_open
    out += events(
        projection,
        log(MessageEvent(role="user", content="Go.")),
        log(ActionEvent(tool_name="terminal", tool_call_id="c1", arguments={"command": "echo hi"})),
        log(PermissionRequestEvent(request_id="r1", tool_call_id="c1", tool_name="terminal", title="echo hi",
                                   arguments={"command": "echo hi"}, options=list(NATIVE_OPTIONS))),
        log(pending(entry("r1", "c1"))),
    )
    assert_valid(out)
    end = out[-1]
    assert end["type"] == "RUN_FINISHED" and end["runId"] == "run-1"
    [raised] = end["outcome"]["interrupts"]
    assert raised["id"] == "r1" and raised["toolCallId"] == "c1" and "subagentRunId" not in raised
    assert raised["metadata"]["taskwire"]["options"][0]["option_id"] == "allow_once"
    assert not projection.run_open and projection.runs_ended == 1


def test_a_resume_raises_only_what_it_does_not_answer_and_suspends_the_asking_subagent() -> None:
    log, projection = Log(), AguiProjection(THREAD, run_id="run-2", answering=["r1"])
    out = [e for _, e in projection.start_run("run-2")]
    stamp = {"subagent_id": "sub-1", "parent_tool_use_id": "task-1"}
    # The waiting set still names the request being answered, and one more: only that one is raised.
    out += events(projection, log(ActionEvent(tool_name="terminal", tool_call_id="c2"), "sub-1", "task-1"),
                  log(pending(entry("r1", "c1", **stamp), entry("r2", "c2", **stamp))))
    assert_valid(out)
    [raised] = out[-1]["outcome"]["interrupts"]
    assert raised["id"] == "r2" and raised["subagentRunId"] == "sub-1"
    assert raised["metadata"]["taskwire"]["parentToolUseId"] == "task-1"
    assert "options" not in raised["metadata"]["taskwire"]  # its request event was not in this stream
    [finished] = [e for e in out if e["type"] == "SUBAGENT_FINISHED"]
    assert finished["outcome"] == {"type": "suspended", "interruptIds": ["r2"]}


def test_a_waiting_set_that_only_holds_what_the_resume_answers_goes_on() -> None:
    log, projection = Log(), AguiProjection(THREAD, run_id="run-2", answering=["r1"])
    projection.start_run("run-2")
    events(projection, log(pending(entry("r1", "c1"))), log(pending()))
    assert projection.run_open
