"""``Tree`` nests events as they arrive, by the one rule every backend follows."""

from __future__ import annotations

from taskwire_client import Message, Subagent, ToolCall, Tree
from taskwire.events import (
    ActionEvent,
    ConversationStateUpdateEvent,
    MessageEvent,
    ObservationEvent,
    StreamingDeltaEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
)

SEQ = iter(range(1, 10_000))


def stored(event):  # type: ignore[no-untyped-def]
    event.seq = next(SEQ)
    return event


def stamped(event, subagent_id: str, parent_tool_use_id: str):  # type: ignore[no-untyped-def]
    event.subagent_id, event.parent_tool_use_id = subagent_id, parent_tool_use_id
    return stored(event)


def test_a_subagent_nests_under_the_call_that_spawned_it_two_levels_deep() -> None:
    tree = Tree("root")
    events = [
        MessageEvent(role="user", content="Go."),
        ActionEvent(tool_name="task", tool_call_id="call_1", arguments={"description": "Outer"}),
        stamped(SubagentStartedEvent(description="Outer", label="task-1"), "s1", "call_1"),
        stamped(ActionEvent(tool_name="task", tool_call_id="call_2", arguments={"description": "Inner"}), "s1", "call_1"),
        stamped(SubagentStartedEvent(description="Inner", label="task-1.1", parent_subagent_id="s1"), "s2", "call_2"),
        stamped(ActionEvent(tool_name="terminal", tool_call_id="call_3", arguments={"command": "echo leaf"}), "s2", "call_2"),
        stamped(ObservationEvent(tool_name="terminal", tool_call_id="call_3", content="leaf", status="completed"), "s2", "call_2"),
        stamped(SubagentFinishedEvent(status="completed", result="leaf"), "s2", "call_2"),
    ]
    for event in events:
        tree.apply(stored(event) if event.seq is None else event)
    assert tree.outline() == [
        "user: Go.",
        "task Outer: in_progress",
        "  general-purpose task-1 Outer: running",
        "    task Inner: in_progress",
        "      general-purpose task-1.1 Inner: completed",
        "        terminal echo leaf: completed",
    ]
    leaf = tree.call("call_3")
    assert leaf is not None and leaf.depth == 4 and leaf.output == "leaf"
    assert tree.events == len(events)


def test_a_subagent_seen_before_its_call_waits_then_moves_under_it() -> None:
    tree = Tree("root")
    early = tree.apply(stamped(ActionEvent(tool_name="terminal", tool_call_id="c9", arguments={"command": "ls"}), "s1", "call_1"))
    assert isinstance(early, ToolCall) and [s.subagent_id for s in tree.waiting] == ["s1"]
    tree.apply(stored(ActionEvent(tool_name="task", tool_call_id="call_1", arguments={"description": "Look"})))
    assert tree.waiting == []
    assert [line.strip() for line in tree.outline()] == ["task Look: in_progress", "sub-agent s1: running", "terminal ls: in_progress"]


def test_usage_and_status_follow_the_events_not_the_first_frame() -> None:
    tree = Tree("root")
    tree.apply(ConversationStateUpdateEvent(key="full_state", value={"status": "running", "usage": {"input_tokens": 82, "output_tokens": 17}}))
    tree.apply(stored(ConversationStateUpdateEvent(key="usage", value={"input_tokens": 418, "output_tokens": 122, "llm_calls": 3})))
    sub_usage = stamped(ConversationStateUpdateEvent(key="usage", value={"input_tokens": 5, "output_tokens": 1}), "s1", "call_1")
    node = tree.apply(sub_usage)
    tree.apply(stored(ConversationStateUpdateEvent(key="status", value="finished")))
    assert tree.usage is not None and (tree.usage.input_tokens, tree.usage.output_tokens) == (418, 122)
    assert isinstance(node, Subagent) and node.usage is not None and node.usage.input_tokens == 5
    assert tree.status == "finished"


def test_streamed_text_is_a_draft_until_the_message_replaces_it() -> None:
    tree = Tree("root")
    draft = tree.apply(StreamingDeltaEvent(content="Thin"))
    tree.apply(StreamingDeltaEvent(content="king"))
    assert isinstance(draft, Message) and draft.draft and draft.text == "Thinking"
    tree.apply(stored(MessageEvent(role="assistant", content="Thinking done.")))
    assert tree.outline() == ["assistant: Thinking done."]


def test_a_finished_subagent_keeps_its_status_whatever_a_stale_tree_says() -> None:
    tree = Tree("root")
    tree.apply(stored(ActionEvent(tool_name="task", tool_call_id="call_1")))
    tree.apply(stamped(SubagentStartedEvent(description="A"), "s1", "call_1"))
    tree.apply(stamped(SubagentFinishedEvent(status="cancelled"), "s1", "call_1"))
    tree.apply_subagents([{"subagent_id": "s1", "parent_tool_use_id": "call_1", "status": "running", "label": "task-1"}])
    sub = tree.subagents["s1"]
    assert (sub.status, sub.label, sub.depth) == ("cancelled", "task-1", 1)
