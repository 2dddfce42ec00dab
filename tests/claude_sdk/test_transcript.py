"""Recorded transcripts: SDK messages to JSONL and back, and how a replay cuts them into turns."""

from __future__ import annotations

from pathlib import Path

from taskwire.claude_sdk.replay import split_turns
from taskwire.claude_sdk.transcript import dump_transcript, load_transcript
from tests.claude_sdk.sdk_messages import (
    agent_call,
    agent_returned,
    assistant,
    message_start,
    result,
    task_notification,
    task_started,
    text,
    tool_result,
    user,
)

RECORDING = Path(__file__).parent / "two_subagents.sdk.jsonl"


def test_sdk_messages_survive_a_round_trip_through_a_transcript(tmp_path: Path) -> None:
    messages = [
        message_start("msg_main_0"),
        assistant(text("hi"), agent_call("toolu_a", "A", "do a"), message_id="msg_main_0"),
        task_started("toolu_a", "task-a", "A"),
        user("do a", parent="toolu_a"),
        user(tool_result("toolu_x", [{"type": "text", "text": "x"}], is_error=True), parent="toolu_a"),
        task_notification("toolu_a", "task-a", "a done"),
        agent_returned("toolu_a", "a done"),
        result("bye", "prompt-1"),
    ]
    dump_transcript(messages, tmp_path / "t.sdk.jsonl")

    assert load_transcript(tmp_path / "t.sdk.jsonl") == messages


def test_the_recording_is_one_prompt_turn() -> None:
    messages = load_transcript(RECORDING)

    assert split_turns(messages) == [messages]


def test_replay_cuts_after_each_prompts_result_and_keeps_the_tail_with_the_last() -> None:
    first = [assistant(text("one"), message_id="m1"), result("one", None)]
    second = [assistant(text("two"), message_id="m2"), result("two", None)]
    tail = [assistant(text("late"), message_id="m3", parent="toolu_bg"),
            result("hand-back", None, origin={"kind": "task-notification"})]

    assert split_turns(first + second + tail) == [first, second + tail]
