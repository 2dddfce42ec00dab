"""The closing rule, as every backend follows it: a call dropped before it ran is ``cancelled``
and the turn still succeeds; a call that ran but returned nothing is ``failed`` and fails the
turn with ``incomplete_tool_call``. Only the result that answers the prompt ends the turn."""

from __future__ import annotations

from taskwire.claude_sdk import ROOT, TurnEnded
from taskwire.events import SubagentFinishedEvent
from taskwire.events.closing import INTERRUPTED, STOPPED_BEFORE_RUN
from tests.claude_sdk.sdk_messages import (
    DispatchLog,
    agent_call,
    assistant,
    content_text,
    json_delta,
    message_end,
    message_start,
    result,
    streamed_call,
    text,
    tool_result,
    tool_start,
    tool_use,
    user,
)


def test_a_streamed_call_dropped_before_it_ran_is_cancelled_and_the_turn_succeeds(session: DispatchLog) -> None:
    prompt = session.begin()
    session.feed(
        message_start("msg_main_0"),
        tool_start(0, "toolu_dropped", "Bash"),
        json_delta(0, '{"command": "rm -'),
        # The model's stream ends without the call ever reaching a complete assistant message.
        *message_end(),
        assistant(text("Never mind."), message_id="msg_main_1"),
        result("Never mind.", prompt),
    )

    assert session.statuses(ROOT, "toolu_dropped") == ["pending", "cancelled"]
    closed = session.call(ROOT, "toolu_dropped")
    assert closed.is_error is True
    assert content_text(closed) == STOPPED_BEFORE_RUN
    assert session.turn_ends() == [TurnEnded("Never mind.")]


def test_a_call_that_ran_without_a_result_is_failed_and_fails_the_turn(session: DispatchLog) -> None:
    prompt = session.begin()
    session.feed(
        message_start("msg_main_0"),
        *streamed_call(0, tool_use("toolu_lost", "Bash", command="echo lost"), message_id="msg_main_0"),
        *message_end(stop_reason="tool_use"),
        result("", prompt),
    )

    assert session.statuses(ROOT, "toolu_lost") == ["pending", "in_progress", "failed"]
    assert content_text(session.call(ROOT, "toolu_lost")) == INTERRUPTED
    [end] = session.turn_ends()
    assert end.code == "incomplete_tool_call"
    assert "toolu_lost" in (end.error or "")


def test_interrupt_cancels_dropped_calls_fails_running_ones_and_their_subagents(session: DispatchLog) -> None:
    prompt = session.begin()
    session.feed(
        message_start("msg_main_0"),
        *streamed_call(0, tool_use("toolu_running", "Bash", command="sleep 60"), message_id="msg_main_0"),
        assistant(agent_call("toolu_agent", "Helper", "help"), message_id="msg_main_0"),
        tool_start(2, "toolu_streaming", "Bash"),
    )
    session.add(session.dispatcher.interrupt())
    # The interrupted turn's tail and its result: ignored, the turn is already over.
    session.feed(
        json_delta(2, '{"command": "late"}'),
        user(tool_result("toolu_running", "late output")),
        result("", prompt, is_error=True, subtype="error_during_execution"),
    )

    assert session.statuses(ROOT, "toolu_running")[-1] == "failed"
    assert session.statuses(ROOT, "toolu_agent")[-1] == "failed"
    assert session.statuses(ROOT, "toolu_streaming") == ["pending", "cancelled"]
    assert content_text(session.call(ROOT, "toolu_streaming")) == STOPPED_BEFORE_RUN
    finished = session.events("toolu_agent")[-1]
    assert isinstance(finished, SubagentFinishedEvent) and finished.status == "cancelled"
    assert session.turn_ends() == []
    assert not session.dispatcher.draining


def test_only_the_result_answering_the_prompt_ends_the_turn(session: DispatchLog) -> None:
    prompt = session.begin("prompt-2")
    session.feed(
        # A turn Claude Code started itself (a background hand-back) ends while ours runs.
        result("injected", None, origin={"kind": "task-notification"}),
        result("stale", "prompt-1"),
        assistant(text("Ours."), message_id="msg_main_0"),
    )
    assert session.turn_ends() == []
    assert session.dispatcher.turn_active

    session.feed(result("Ours.", prompt))
    assert session.turn_ends() == [TurnEnded("Ours.")]


def test_an_error_result_fails_the_turn_with_its_reason(session: DispatchLog) -> None:
    prompt = session.begin()
    failed = result("", prompt, is_error=True, subtype="error_max_turns")
    failed.errors = ["Reached maximum number of turns (1)"]
    session.feed(failed)

    assert session.turn_ends() == [
        TurnEnded(None, error="Reached maximum number of turns (1)", code="error_max_turns")
    ]


def test_stopping_the_session_closes_open_calls_and_subagents(session: DispatchLog) -> None:
    session.begin()
    session.feed(
        assistant(agent_call("toolu_agent", "Helper", "help"), message_id="msg_main_0"),
        assistant(tool_use("toolu_sub", "Bash", command="sleep 60"), message_id="msg_sub_0", parent="toolu_agent"),
    )
    session.add(session.dispatcher.stop("Claude Code exited", code="claude_code_exited"))

    assert session.statuses("toolu_agent", "toolu_sub")[-1] == "failed"
    finished = session.events("toolu_agent")[-1]
    assert isinstance(finished, SubagentFinishedEvent) and finished.status == "error"
    assert session.turn_ends() == [TurnEnded(None, error="Claude Code exited", code="claude_code_exited")]


def test_a_turn_claude_code_starts_by_itself_is_shown_but_ends_no_run(session: DispatchLog) -> None:
    prompt = session.begin()
    session.feed(assistant(text("Started it."), message_id="msg_main_0"), result("Started it.", prompt))
    # A background sub-agent's hand-back makes Claude Code answer again, unprompted.
    session.feed(
        message_start("msg_main_1"),
        assistant(text("The background work is done."), message_id="msg_main_1"),
        tool_start(1, "toolu_unprompted", "Bash"),
        result("The background work is done.", None, origin={"kind": "task-notification"}),
    )

    assert session.messages(ROOT) == ["Started it.", "The background work is done."]
    assert session.statuses(ROOT, "toolu_unprompted") == ["pending", "cancelled"]
    assert session.turn_ends() == [TurnEnded("Started it.")]
    assert not session.dispatcher.turn_active
