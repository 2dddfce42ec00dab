"""The ACP mapping, Sans-I/O: session/update payloads in, events and sub-agent actions out."""

from __future__ import annotations

import json

from taskwire.acp.mapping import CloseReason, FinishSubagent, SessionMapper, StartSubagent
from taskwire.events import MessageEvent, StreamingDeltaEvent, SubagentFinishedEvent
from tests.acp.helpers import agent_call, chunk, emitted, feed, tool_call, tool_events, update


def started_mapper() -> SessionMapper:
    mapper = SessionMapper()
    mapper.begin_turn()
    return mapper


def test_subagent_call_named_at_start_goes_to_its_subagent() -> None:
    mapper = started_mapper()
    actions = feed(
        mapper,
        *agent_call("agent-a", "a"),
        tool_call("sub-1", "echo a", parent="agent-a"),
        update("sub-1", parent="agent-a", status="completed", rawOutput="a"),
    )
    starts = [a for a in actions if isinstance(a, StartSubagent)]
    assert starts == [StartSubagent("agent-a", None, subagent_type="general-purpose", description="Echo a")]
    sub_events = [e for e in tool_events(actions) if e.tool_call_id == "sub-1"]
    assert [e.status for e in sub_events] == ["pending", "completed"]
    assert all(e.parent_tool_use_id == "agent-a" for e in sub_events)
    # The sub-agent starts before any of its events, with its prompt as its first message.
    first_sub_event = next(i for i, a in enumerate(actions) if getattr(a, "event", None) is not None
                           and a.event.parent_tool_use_id == "agent-a")
    assert actions.index(starts[0]) < first_sub_event
    prompt = emitted(actions)[[e.parent_tool_use_id for e in emitted(actions)].index("agent-a")]
    assert isinstance(prompt, MessageEvent) and prompt.role == "user" and prompt.content == "run echo a"


def test_parent_named_only_on_progress_is_remembered_for_the_terminal_event() -> None:
    mapper = started_mapper()
    actions = feed(
        mapper,
        *agent_call("agent-b", "b"),
        tool_call("sub-2", "echo b"),  # the start does not name the parent
        update("sub-2", parent="agent-b", status="in_progress"),
        update("sub-2", title="echo b (running)"),  # a later update loses it again
        update("sub-2", status="completed", rawOutput="b"),
    )
    events = [e for e in tool_events(actions) if e.tool_call_id == "sub-2"]
    assert [(e.status, e.parent_tool_use_id) for e in events] == [
        ("pending", None),  # stays where it landed: the parent's stream
        ("in_progress", "agent-b"),
        ("in_progress", "agent-b"),
        ("completed", "agent-b"),
    ]


def test_first_named_parent_is_kept() -> None:
    mapper = started_mapper()
    actions = feed(mapper, tool_call("x", parent="agent-1"), update("x", parent="agent-2", status="completed"))
    assert [e.parent_tool_use_id for e in tool_events(actions)] == ["agent-1", "agent-1"]


def test_main_agent_calls_serialize_without_stamp_keys() -> None:
    mapper = started_mapper()
    actions = feed(mapper, tool_call("main-1", "ls", kind="execute"), update("main-1", status="completed", rawOutput="a b"))
    for event in tool_events(actions):
        wire = json.loads(event.to_json())
        assert "parent_tool_use_id" not in wire and "subagent_id" not in wire
    assert not [a for a in actions if isinstance(a, StartSubagent)]


def test_parent_tool_call_id_names_are_accepted() -> None:
    mapper = started_mapper()
    actions = feed(
        mapper,
        {**tool_call("a"), "_meta": {"parent_tool_call_id": "call-1"}},
        {**tool_call("b"), "_meta": {"parentToolCallId": "call-2"}},
        {**tool_call("c"), "parentToolCallId": "call-3"},
    )
    assert [e.parent_tool_use_id for e in tool_events(actions)] == ["call-1", "call-2", "call-3"]


def test_parent_id_without_an_agent_call_starts_a_subagent_lazily() -> None:
    mapper = started_mapper()
    actions = feed(mapper, tool_call("x", parent="never-seen"), update("x", parent="never-seen", status="completed"))
    assert isinstance(actions[0], StartSubagent) and actions[0].tool_call_id == "never-seen"
    assert actions[0].subagent_type == "unknown"
    end = mapper.end_turn()
    finished = [a for a in end.actions if isinstance(a, FinishSubagent)]
    assert [(f.tool_call_id, f.status) for f in finished] == [("never-seen", "completed")]


def test_subagent_text_is_kept_apart_from_the_main_message() -> None:
    mapper = started_mapper()
    actions = feed(
        mapper,
        chunk("Main "),
        chunk("thinks.", thought=True),
        *agent_call("agent-a", "a"),
        chunk("sub text", parent="agent-a"),
        chunk("says."),
        update("agent-a", status="completed", content=[{"type": "content", "content": {"type": "text", "text": "sub answer"}}]),
    )
    deltas = [e for e in emitted(actions) if isinstance(e, StreamingDeltaEvent)]
    assert [(d.content, d.channel, d.parent_tool_use_id) for d in deltas] == [
        ("Main ", "text", None), ("thinks.", "thought", None), ("sub text", "text", "agent-a"), ("says.", "text", None),
    ]
    sub_messages = [e for e in emitted(actions) if isinstance(e, MessageEvent) and e.role == "assistant"]
    assert [(m.content, m.parent_tool_use_id) for m in sub_messages] == [("sub text", "agent-a")]
    finish = next(a for a in actions if isinstance(a, FinishSubagent))
    assert (finish.status, finish.result) == ("completed", "sub answer")
    end = mapper.end_turn()
    # Text split by the Agent call: two segments of one final message, without the sub-agent's.
    assert end.text == "Main\n\nsays."
    assert [e.content for e in emitted(end.actions)] == ["Main\n\nsays."]


def test_agent_call_end_finishes_its_subagent_before_its_own_event() -> None:
    mapper = started_mapper()
    feed(mapper, *agent_call("agent-a", "a"), tool_call("sub-1", parent="agent-a"))
    response = {"usage": {"input_tokens": 7, "output_tokens": 3, "cache_read_input_tokens": 1}, "content": []}
    actions = feed(
        mapper,
        update("agent-a", _meta={"claudeCode": {"toolName": "Agent", "toolResponse": response}}),
        update("agent-a", status="failed", rawOutput="boom"),
    )
    kinds = [type(a).__name__ if not hasattr(a, "event") else a.event.tool_call_id for a in actions]
    # The sub-agent's open call closes, the sub-agent finishes, then the Agent call's event.
    assert kinds == ["sub-1", "FinishSubagent", "agent-a"]
    finish = actions[1]
    assert finish.status == "error" and finish.result == "boom"
    assert (finish.usage.input_tokens, finish.usage.output_tokens, finish.usage.cache_read_tokens) == (7, 3, 1)
    closed = actions[0].event
    assert (closed.status, closed.parent_tool_use_id) == ("cancelled", "agent-a")


def test_pending_call_at_turn_end_is_cancelled_and_the_turn_succeeds() -> None:
    mapper = started_mapper()
    feed(mapper, tool_call("p", "never ran"))
    end = mapper.end_turn()
    (event,) = tool_events(end.actions)
    assert (event.status, event.is_error) == ("cancelled", True)
    assert "stopped before it ran" in event.content[-1]["content"]["text"]
    assert end.incomplete == []


def test_call_that_ran_without_result_fails_the_turn() -> None:
    mapper = started_mapper()
    feed(mapper, tool_call("r", "ran", status="in_progress"))
    end = mapper.end_turn()
    (event,) = tool_events(end.actions)
    assert event.status == "failed"
    assert end.incomplete == ["r"]


def test_abort_closes_every_call_in_flight_with_its_parent() -> None:
    mapper = started_mapper()
    feed(
        mapper,
        tool_call("main", status="in_progress"),
        *agent_call("agent-a", "a"),
        tool_call("sub-run", parent="agent-a", status="in_progress"),
        tool_call("sub-wait", parent="agent-a"),
        chunk("partial"),
    )
    end = mapper.abort_turn(CloseReason.CANCELLED)
    closed = {e.tool_call_id: (e.status, e.parent_tool_use_id) for e in tool_events(end.actions)}
    assert closed == {
        "sub-run": ("failed", "agent-a"),
        "sub-wait": ("cancelled", "agent-a"),
        "main": ("failed", None),
        "agent-a": ("failed", None),  # its sub-agent worked: it ran
    }
    finish = next(a for a in end.actions if isinstance(a, FinishSubagent))
    assert finish.status == "cancelled"
    assert end.text == "partial" and end.incomplete == []
    assert all("the turn was cancelled" in e.content[-1]["content"]["text"] for e in tool_events(end.actions))


def test_status_spellings_outside_acp_are_understood() -> None:
    mapper = started_mapper()
    actions = feed(mapper, tool_call("c", status="in_progress"), update("c", status="canceled"),
                   tool_call("d", status="in_progress"), update("d", status="no-such-status"))
    assert [e.status for e in tool_events(actions)] == ["in_progress", "cancelled", "in_progress"]


def test_updates_that_change_nothing_shown_emit_nothing() -> None:
    mapper = started_mapper()
    actions = feed(mapper, tool_call("a"), update("a", _meta={"claudeCode": {"toolResponse": {"stdout": "x"}}}))
    assert len(tool_events(actions)) == 1


def test_permission_request_can_announce_a_call() -> None:
    mapper = started_mapper()
    actions = mapper.receive_permission_request(
        {"sessionId": "s", "toolCall": {"toolCallId": "p", "title": "rm -rf build", "_meta": {"claudeCode": {"parentToolUseId": "agent-x"}}},
         "options": []}
    )
    assert isinstance(actions[0], StartSubagent)
    (event,) = tool_events(actions)
    assert (event.title, event.parent_tool_use_id) == ("rm -rf build", "agent-x")


def test_nested_agent_call_starts_its_subagent_under_its_own_subagent() -> None:
    mapper = started_mapper()
    actions = feed(
        mapper,
        *agent_call("outer", "outer"),
        *[{**u, "_meta": {"claudeCode": {"toolName": "Agent", "parentToolUseId": "outer"}}} for u in agent_call("inner", "inner")],
        tool_call("leaf", parent="inner"),
    )
    starts = [(a.tool_call_id, a.lane) for a in actions if isinstance(a, StartSubagent)]
    assert starts == [("outer", None), ("inner", "outer")]
    end = mapper.abort_turn(CloseReason.FAILED)
    finished = [a.tool_call_id for a in end.actions if isinstance(a, FinishSubagent)]
    assert finished == ["inner", "outer"]  # deepest first
    assert not any(isinstance(e, SubagentFinishedEvent) for e in emitted(end.actions))


def test_agent_call_the_peer_fails_while_cancelling_ends_its_subagent_cancelled() -> None:
    mapper = started_mapper()
    feed(mapper, *agent_call("agent-a", "a"), tool_call("sub-1", parent="agent-a", status="in_progress"))
    mapper.stopping(CloseReason.CANCELLED)
    actions = feed(
        mapper,
        update("sub-1", parent="agent-a", status="failed"),
        update("agent-a", status="failed", rawOutput="The turn was cancelled."),
    )
    finish = next(a for a in actions if isinstance(a, FinishSubagent))
    assert finish.status == "cancelled"
    assert [(e.tool_call_id, e.status) for e in tool_events(actions)] == [("sub-1", "failed"), ("agent-a", "failed")]
