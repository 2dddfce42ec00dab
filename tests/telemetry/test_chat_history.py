"""Each ``chat`` span's input (content capture), Sans-I/O: what the model was given, bounded."""

from __future__ import annotations

import json
from typing import Any

from taskwire.events import ActionEvent, ConversationStateUpdateEvent, Event, MessageEvent, ObservationEvent, SubagentStartedEvent
from taskwire.store.rows import event_record
from taskwire.telemetry.chat_history import ChatHistory
from taskwire.telemetry.span_builder import SpanBuilder
from taskwire.telemetry.spans import MAX_CONTENT_CHARS
from tests.telemetry.spans import Span, from_span_data

ROOT = "root-1"


def usage(response_id: str) -> ConversationStateUpdateEvent:
    added = {"model": "m", "input_tokens": 1, "output_tokens": 1, "started_at": "2026-01-01T00:00:00Z", "response_id": response_id}
    return ConversationStateUpdateEvent(key="usage", value={"added": added})


def chats(events: list[tuple[str, Event]], *, first_seq: int = 1, builder: SpanBuilder | None = None) -> list[Span]:
    builder = builder or SpanBuilder(capture_content=True)
    for seq, (conversation_id, event) in enumerate(events, start=first_seq):
        event.seq = seq
        if conversation_id != ROOT:
            event.parent_tool_use_id, event.subagent_id = "c2", conversation_id
        builder.receive(event_record(conversation_id, ROOT, event))
    spans = sorted(from_span_data(builder.spans_to_export()), key=lambda s: s.attributes["taskwire.seq.first"])
    return [s for s in spans if s.operation == "chat"]


def inputs(span: Span) -> list[dict[str, Any]]:
    return json.loads(span.attributes["gen_ai.input.messages"])


def test_each_chat_span_holds_the_history_its_request_was_given() -> None:
    events: list[tuple[str, Event]] = [
        (ROOT, MessageEvent(role="user", content="list the files")),
        (ROOT, ConversationStateUpdateEvent(key="status", value="running")),
        (ROOT, usage("r1")),
        (ROOT, ActionEvent(tool_name="terminal", tool_call_id="c1", arguments={"command": "ls"}, thought="Looking.", llm_response_id="r1")),
        (ROOT, ActionEvent(tool_name="task", tool_call_id="c2", arguments={"prompt": "count them"}, llm_response_id="r1")),
        ("sub-1", SubagentStartedEvent()),
        ("sub-1", MessageEvent(role="user", content="count them")),
        ("sub-1", usage("s1")),
        ("sub-1", MessageEvent(role="assistant", content="three")),
        (ROOT, ObservationEvent(tool_name="task", tool_call_id="c2", content="three")),  # ended first
        (ROOT, ObservationEvent(tool_name="terminal", tool_call_id="c1", content="a b c")),
        (ROOT, usage("r2")),
        (ROOT, MessageEvent(role="assistant", content="three files")),
        (ROOT, ConversationStateUpdateEvent(key="status", value="finished")),
    ]
    first, sub, last = chats(events)
    assert inputs(first) == [{"role": "user", "parts": [{"type": "text", "content": "list the files"}]}]
    assert inputs(sub) == [{"role": "user", "parts": [{"type": "text", "content": "count them"}]}]
    assert inputs(last)[1:] == [
        {"role": "assistant", "parts": [
            {"type": "text", "content": "Looking."},
            {"type": "tool_call", "id": "c1", "name": "terminal", "arguments": {"command": "ls"}},
            {"type": "tool_call", "id": "c2", "name": "task", "arguments": {"prompt": "count them"}},
        ]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "a b c"}]},  # in call order
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c2", "response": "three"}]},
    ]
    assert not any("taskwire.input.partial" in s.attributes for s in (first, sub, last))


def test_a_long_history_keeps_its_newest_messages_within_the_bound_and_says_it_is_partial() -> None:
    builder = SpanBuilder(capture_content=True)
    events: list[tuple[str, Event]] = [(ROOT, ConversationStateUpdateEvent(key="status", value="running"))]
    for turn in range(20):
        events += [(ROOT, MessageEvent(role="user", content=f"turn {turn} " + "x" * 2 * MAX_CONTENT_CHARS)), (ROOT, usage(f"r{turn}"))]
    events.append((ROOT, ConversationStateUpdateEvent(key="status", value="finished")))
    spans = chats(events, builder=builder)
    first, last = inputs(spans[0]), inputs(spans[-1])
    assert len(first[0]["parts"][0]["content"]) == MAX_CONTENT_CHARS + 1  # clipped, as other content is
    assert "taskwire.input.partial" not in spans[0].attributes
    assert len(spans[-1].attributes["gen_ai.input.messages"]) <= ChatHistory().max_chars
    assert last[-1]["parts"][0]["content"].startswith("turn 19 ") and not any(m["parts"][0]["content"].startswith("turn 0 ") for m in last)
    assert spans[-1].attributes["taskwire.input.partial"] is True


def test_a_conversation_begun_before_the_server_saw_it_is_partial() -> None:
    events: list[tuple[str, Event]] = [
        (ROOT, MessageEvent(role="user", content="and now?")),
        (ROOT, ConversationStateUpdateEvent(key="status", value="running")),
        (ROOT, usage("r1")),
        (ROOT, ConversationStateUpdateEvent(key="status", value="finished")),
    ]
    (chat,) = chats(events, first_seq=40)
    assert chat.attributes["taskwire.input.partial"] is True
    assert inputs(chat) == [{"role": "user", "parts": [{"type": "text", "content": "and now?"}]}]


def test_histories_are_freed_with_their_sub_agents_and_bounded_between_runs() -> None:
    history = ChatHistory(max_idle=2)
    for n in range(5):  # five roots sent a message each, none of them running
        event = MessageEvent(role="user", content="hi")
        event.seq = 1
        history.receive(event_record(f"root-{n}", f"root-{n}", event), {"role": "user", "content": "hi"})
    assert len(history) == 2 and history.input_messages("root-4") is not None
    builder = SpanBuilder(capture_content=True)
    chats([(ROOT, ConversationStateUpdateEvent(key="status", value="running")), ("sub-1", SubagentStartedEvent()),
           ("sub-1", MessageEvent(role="user", content="go")), (ROOT, ConversationStateUpdateEvent(key="status", value="finished"))],
          builder=builder)
    assert len(builder._history or ()) == 1  # the root's, kept for its next run; the sub-agent's is gone
