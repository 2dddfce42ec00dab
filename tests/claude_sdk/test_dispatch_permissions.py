"""Which lane a ``can_use_tool`` call comes from, and its call's status while it waits (Sans-I/O)."""

from __future__ import annotations

from pathlib import Path

from taskwire.claude_sdk import ROOT, ClaudeDispatcher
from taskwire.claude_sdk.transcript import PermissionAsk, load_transcript
from taskwire.events import ACPToolCallEvent

RECORDING = Path(__file__).parent / "permission_subagents.sdk.jsonl"


def replayed() -> tuple[ClaudeDispatcher, list[tuple[PermissionAsk, tuple[bool, object]]]]:
    """The recording fed in order; each recorded ask with what ``lane_asking`` said then."""
    dispatcher, asks = ClaudeDispatcher(), []
    dispatcher.begin_turn("prompt")
    for message in load_transcript(RECORDING):
        if isinstance(message, PermissionAsk):
            asks.append((message, dispatcher.lane_asking(message.tool_use_id, message.agent_id)))
        else:
            dispatcher.feed(message)
    return dispatcher, asks


def test_each_recorded_ask_comes_from_the_lane_of_its_call() -> None:
    _, asks = replayed()
    assert [(ask.tool_use_id, found) for ask, found in asks] == [
        ("toolu_main_0_1_0002", (True, ROOT)),
        ("toolu_subagenta_0_0_0009", (True, "toolu_main_1_1_0005")),
        ("toolu_subagentb_0_0_0012", (True, "toolu_main_1_2_0006")),
    ]


def test_an_unknown_call_falls_back_to_its_agent_id_then_to_the_main_agent() -> None:
    dispatcher, _ = replayed()
    assert dispatcher.lane_asking("toolu_never_seen", "a17221a60328deb40") == (False, "toolu_main_1_1_0005")
    assert dispatcher.lane_asking("toolu_never_seen", "no-such-task") == (False, ROOT)
    assert dispatcher.lane_asking(None, None) == (False, ROOT)


def test_a_waiting_call_is_pending_and_runs_once_allowed() -> None:
    dispatcher = ClaudeDispatcher()
    dispatcher.begin_turn("prompt")
    for message in load_transcript(RECORDING):
        if isinstance(message, PermissionAsk):
            break
        dispatcher.feed(message)
    [waiting] = dispatcher.permission_wait("toolu_main_0_1_0002", True)
    assert isinstance(waiting.event, ACPToolCallEvent) and waiting.event.status == "pending"
    [closed] = [a for a in dispatcher.interrupt() if getattr(a.event, "tool_call_id", None) == "toolu_main_0_1_0002"]
    assert closed.event.status == "cancelled"  # it never ran
    assert dispatcher.permission_wait("toolu_unknown", True) == []
