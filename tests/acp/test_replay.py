"""The recorded claude-agent-acp transcript (two sub-agents in parallel) through the mapping."""

from __future__ import annotations

import json

from taskwire.acp.mapping import FinishSubagent, StartSubagent
from taskwire.events import MessageEvent
from tests.acp.helpers import FIXTURE as REPO_FIXTURE, emitted, replay, tool_events

AGENT_A, AGENT_B = "toolu_main_1_1_0007", "toolu_main_1_2_0008"


def test_replayed_transcript_attributes_subagent_calls_to_their_agent_calls() -> None:
    actions, _ = replay()
    calls = {e.tool_call_id: e for e in tool_events(actions)}  # last event per call wins
    assert len(calls) == 5
    parents = {call_id: event.parent_tool_use_id for call_id, event in calls.items()}
    assert parents == {
        "toolu_main_0_1_0004": None,  # the main agent's Bash
        AGENT_A: None,
        AGENT_B: None,
        "toolu_subagenta_0_0_0011": AGENT_A,
        "toolu_subagentb_0_0_0014": AGENT_B,
    }
    assert all(event.status == "completed" for event in calls.values())
    assert calls["toolu_subagenta_0_0_0011"].title == "echo subagent-a"
    assert calls[AGENT_B].title == "Echo subagent-b"


def test_replayed_main_agent_calls_carry_no_stamp_on_the_wire() -> None:
    actions, _ = replay()
    for event in tool_events(actions):
        wire = json.loads(event.to_json())
        if event.tool_call_id.startswith("toolu_main"):
            assert "parent_tool_use_id" not in wire and "subagent_id" not in wire
        else:
            assert wire["parent_tool_use_id"] in (AGENT_A, AGENT_B)


def test_replayed_agent_calls_become_subagents_with_their_answers() -> None:
    actions, _ = replay()
    starts = [a for a in actions if isinstance(a, StartSubagent)]
    assert [(s.tool_call_id, s.subagent_type, s.description) for s in starts] == [
        (AGENT_A, "general-purpose", "Echo subagent-a"),
        (AGENT_B, "general-purpose", "Echo subagent-b"),
    ]
    finished = {a.tool_call_id: a for a in actions if isinstance(a, FinishSubagent)}
    assert finished[AGENT_A].status == "completed"
    assert finished[AGENT_A].result == "subagent-a done: the command printed subagent-a."
    assert finished[AGENT_B].usage is not None and finished[AGENT_B].usage.input_tokens == 2614
    # Every event of a sub-agent comes after its start and before its finish.
    for call_id in (AGENT_A, AGENT_B):
        lane = [i for i, a in enumerate(actions) if getattr(a, "event", None) is not None
                and a.event.parent_tool_use_id == call_id]
        start = next(i for i, a in enumerate(actions) if isinstance(a, StartSubagent) and a.tool_call_id == call_id)
        finish = actions.index(finished[call_id])
        assert start < min(lane) and max(lane) < finish


def test_replayed_turn_ends_with_one_message_of_the_main_agent() -> None:
    actions, _ = replay()
    messages = [e for e in emitted(actions) if isinstance(e, MessageEvent) and e.role == "assistant"]
    assert len(messages) == 1 and messages[0].parent_tool_use_id is None
    assert messages[0].content.endswith("All done: main-agent, subagent-a and subagent-b were echoed.")
    assert actions[-1] == next(a for a in actions if getattr(a, "event", None) is messages[0])


def test_the_agents_own_running_cost_gives_each_turns_cost() -> None:
    """claude-agent-acp sends Claude Code's running session cost in ``usage_update``: a turn's
    cost is its rise, kept as the backend's own figure."""
    costs = [json.loads(line)["msg"]["params"]["update"]["cost"]["amount"]
             for line in (REPO_FIXTURE).read_text().splitlines() if '"cost"' in line]
    _, mapper = replay()
    assert costs and mapper.turn_cost() == round(costs[-1], 12)
    assert mapper.turn_cost() == 0.0  # nothing more was spent
    mapper.receive_update({"sessionUpdate": "usage_update", "used": 10, "size": 100, "cost": {"amount": costs[-1] + 0.25, "currency": "USD"}})
    assert mapper.turn_cost() == 0.25
    mapper.receive_update({"sessionUpdate": "usage_update", "used": 10, "size": 100, "cost": {"amount": "lots", "currency": "USD"}})
    assert mapper.turn_cost() == 0.0  # a malformed figure is not taken
