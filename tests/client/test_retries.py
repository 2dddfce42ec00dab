"""A model call's retry, as ``Tree`` keeps it and ``taskwire watch`` shows it: under the
sub-agent whose call it is, the failed attempt's streamed text dropped."""

from __future__ import annotations

from taskwire_client import Tree
from taskwire.events import ActionEvent, LLMRetryEvent, MessageEvent, StreamingDeltaEvent, SubagentStartedEvent
from tests.client.test_tree import stamped, stored
from tests.client.test_work_state import shown


def test_a_retry_shows_under_its_sub_agent_and_the_failed_attempts_text_is_dropped() -> None:
    tree = Tree("root")
    tree.apply(stored(ActionEvent(tool_name="task", tool_call_id="L", arguments={"description": "Find it"})))
    tree.apply(stamped(SubagentStartedEvent(description="Find it"), "s1", "L"))
    tree.apply(stamped(StreamingDeltaEvent(content="Looking ar"), "s1", "L"))
    retry = LLMRetryEvent(attempt=2, max_attempts=7, delay=4, reason="429", error="rate limited", discard_text=True)
    tree.apply(stamped(retry, "s1", "L"))
    tree.apply(stamped(StreamingDeltaEvent(content="Looking around"), "s1", "L"))
    assert [line.strip() for line in tree.outline()] == [
        "task Find it: in_progress",
        "general-purpose Find it: running",
        "retry: retrying in 4 s (429), attempt 2 of 7",
        "assistant: Looking around",
    ]
    screen = shown(tree)
    assert "retrying in 4 s (429), attempt 2 of 7" in screen
    assert screen.count("Looking ar") == 1
    tree.apply(stamped(MessageEvent(role="assistant", content="Looking around."), "s1", "L"))
    assert tree.outline()[-1].strip() == "assistant: Looking around."


def test_a_retry_of_the_main_agent_without_streamed_text_keeps_what_was_shown() -> None:
    tree = Tree("root")
    tree.apply(stored(MessageEvent(role="user", content="Go.")))
    tree.apply(stored(LLMRetryEvent(attempt=3, max_attempts=7, delay=0.5, reason="connection", error="reset")))
    assert tree.outline() == ["user: Go.", "retry: retrying in 0.5 s (connection), attempt 3 of 7"]
