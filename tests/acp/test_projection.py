"""The ACP projection without I/O: taskwire events (as the socket sends them) in, ACP updates out.
Every update it makes must validate, unchanged, against the ``agent-client-protocol`` models."""

from __future__ import annotations

import json
from typing import Any

from acp.schema import SessionNotification

from taskwire.acp.projection import ACPProjection, RunEnded, Update
from taskwire.events import (
    ACPToolCallEvent,
    ActionEvent,
    AgentErrorEvent,
    ConversationStateUpdateEvent,
    Event,
    LLMRetryEvent,
    MessageEvent,
    ObservationEvent,
    StreamingDeltaEvent,
    SubagentStartedEvent,
)

SUB = {"parent_tool_use_id": "call_task", "subagent_id": "sub-1"}
SUB_META = {"claudeCode": {"parentToolUseId": "call_task"}, "taskwire": {"subagentId": "sub-1"}}


class Feed:
    """Feeds events with increasing ``seq`` (deltas get none), as the socket would."""

    def __init__(self, **options: Any) -> None:
        self.projection = ACPProjection(**options)
        self.seq = 0

    def __call__(self, *events: Event, replaying: bool = False) -> list[Any]:
        outputs = []
        for event in events:
            if not event.ephemeral:
                self.seq += 1
                event.seq = self.seq
            outputs.extend(self.projection.receive(json.loads(event.to_json()), replaying=replaying))
        return outputs


def updates(outputs: list[Any]) -> list[dict[str, Any]]:
    """The update payloads, each checked to validate unchanged against the package's models."""
    found = []
    for output in outputs:
        if isinstance(output, Update):
            model = SessionNotification.model_validate({"sessionId": "s", "update": output.payload})
            assert model.model_dump(mode="json", by_alias=True, exclude_none=True)["update"] == output.payload
            found.append(output.payload)
    return found


def action(name: str, call_id: str, stamp: dict[str, str] | None = None, **arguments: Any) -> ActionEvent:
    return ActionEvent(tool_name=name, tool_call_id=call_id, arguments=arguments, **(stamp or {}))


def observation(name: str, call_id: str, content: str, stamp: dict[str, str] | None = None, **fields: Any) -> ObservationEvent:
    return ObservationEvent(tool_name=name, tool_call_id=call_id, content=content, **(stamp or {}), **fields)


def status(value: str) -> ConversationStateUpdateEvent:
    return ConversationStateUpdateEvent(key="status", value=value)


def test_a_native_call_goes_pending_in_progress_completed_with_input_output_and_text() -> None:
    feed = Feed()
    shown = updates(feed(action("terminal", "c1", command="echo hi"), observation("terminal", "c1", "exit code: 0\nhi\n")))
    assert shown == [
        {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "echo hi", "kind": "execute", "status": "pending",
         "rawInput": {"command": "echo hi"}, "_meta": {"taskwire": {"toolName": "terminal"}}},
        {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress", "_meta": {"taskwire": {"toolName": "terminal"}}},
        {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
         "rawOutput": {"content": "exit code: 0\nhi\n", "isError": False},
         "content": [{"type": "content", "content": {"type": "text", "text": "exit code: 0\nhi\n"}}],
         "_meta": {"taskwire": {"toolName": "terminal"}}},
    ]


def test_kinds_titles_and_locations_follow_the_tool() -> None:
    feed = Feed(workspace="/work/project")
    starts = [u for u in updates(feed(
        action("file_editor", "v", command="view", path="README.md"),
        action("file_editor", "c", command="create", path="src/a.py", file_text="x = 1\n"),
        action("file_editor", "e", command="str_replace", path="/abs/b.py", old_str="a", new_str="b"),
        action("think", "t", thought="Plan first."),
        action("task", "k", description="Explore the code", prompt="Find the parser.", subagent_type="code-explorer"),
        action("my_plugin_tool", "p"),
    )) if u["sessionUpdate"] == "tool_call"]
    assert [(u["kind"], u["title"]) for u in starts] == [
        ("read", "Read README.md"), ("edit", "Create src/a.py"), ("edit", "Edit /abs/b.py"), ("think", "Think"),
        ("other", "Explore the code"), ("other", "my_plugin_tool")]
    assert starts[0]["locations"] == [{"path": "/work/project/README.md"}]
    assert starts[1]["content"] == [{"type": "diff", "path": "/work/project/src/a.py", "newText": "x = 1\n"}]
    assert starts[2]["content"] == [{"type": "diff", "path": "/abs/b.py", "oldText": "a", "newText": "b"}]
    assert starts[3]["content"][0]["content"]["text"] == "Plan first."
    assert starts[4]["_meta"] == {"claudeCode": {"toolName": "Agent"}, "taskwire": {"toolName": "task"}}
    assert starts[4]["rawInput"] == {"description": "Explore the code", "prompt": "Find the parser.", "subagent_type": "code-explorer"}
    # A diff or a thought stays when the result comes; the result follows it.
    done = updates(feed(observation("file_editor", "c", "Created src/a.py")))[0]
    assert [block["type"] for block in done["content"]] == ["diff", "content"]


def test_subagent_updates_carry_the_stamp_and_main_agent_updates_none() -> None:
    feed = Feed()
    shown = updates(feed(
        action("task", "call_task", description="Sub", prompt="Do it."),
        MessageEvent(role="user", source="user", content="Do it.", **SUB),  # its prompt: the task call shows it
        StreamingDeltaEvent(content="Work", **SUB),
        action("terminal", "c2", SUB, command="ls"),
        observation("terminal", "c2", "ok", SUB),
        action("finish", "c3", SUB, message="All done."),
        observation("finish", "c3", "All done.", SUB),
        observation("task", "call_task", "Sub-agent task-1 completed.\n\nAll done."),
    ))
    main, sub = shown[:2] + shown[-1:], shown[2:-1]
    assert all("_meta" not in u or "parentToolUseId" not in u["_meta"].get("claudeCode", {}) for u in main)
    assert all(u["_meta"]["claudeCode"]["parentToolUseId"] == "call_task" for u in sub)
    assert all(u["_meta"]["taskwire"]["subagentId"] == "sub-1" for u in sub)
    assert [(u["sessionUpdate"], u.get("content", {}).get("text")) for u in sub if "chunk" in u["sessionUpdate"]] == [
        ("agent_message_chunk", "Work"), ("agent_message_chunk", "All done.")]  # finish is the answer, as text
    assert "c3" not in {u.get("toolCallId") for u in shown}


def test_streamed_text_is_not_repeated_and_a_replay_sends_it_whole() -> None:
    live = Feed()
    streamed = updates(live(
        StreamingDeltaEvent(content="Hello "), StreamingDeltaEvent(content="world"),
        MessageEvent(role="assistant", content="Hello world."),
    ))
    assert [u["content"]["text"] for u in streamed] == ["Hello ", "world", "."]
    replay = Feed()
    assert [u["content"]["text"] for u in updates(replay(MessageEvent(role="assistant", content="Hello world."), replaying=True))] == ["Hello world."]


def test_texts_of_one_lane_without_a_call_between_are_kept_apart() -> None:
    feed = Feed()
    texts = [u["content"]["text"] for u in updates(feed(
        ActionEvent(tool_name="finish", tool_call_id="f", arguments={"message": "The answer."}, thought="Let me answer."),
    ))]
    assert texts == ["Let me answer.", "\n\nThe answer."]


def test_after_a_resume_deltas_wait_for_the_stored_text() -> None:
    feed = Feed()
    first = updates(feed(StreamingDeltaEvent(content="Par")))
    feed.projection.resumed()
    later = updates(feed(StreamingDeltaEvent(content="lost?"), MessageEvent(role="assistant", content="Partial and whole.")))
    assert [u["content"]["text"] for u in first + later] == ["Par", "tial and whole."]


def retry(discard: bool, **stamp: str) -> LLMRetryEvent:
    return LLMRetryEvent(attempt=2, max_attempts=7, delay=4, reason="429", error="rate limited", status_code=429,
                         discard_text=discard or None, **stamp)


def test_a_retry_is_a_thought_under_its_sub_agent_and_the_same_text_is_never_sent_twice() -> None:
    feed = Feed()
    sent = updates(feed(
        StreamingDeltaEvent(content="Hello ", **SUB), retry(True, **SUB),
        StreamingDeltaEvent(content="Hel", **SUB), StreamingDeltaEvent(content="lo wor", **SUB),
        StreamingDeltaEvent(content="ld", **SUB), MessageEvent(role="assistant", content="Hello world.", **SUB),
    ))
    [notice] = [u for u in sent if u["sessionUpdate"] == "agent_thought_chunk"]
    assert notice["content"]["text"] == "retrying in 4 s (429), attempt 2 of 7"
    assert notice["_meta"]["claudeCode"] == SUB_META["claudeCode"]
    assert notice["_meta"]["taskwire"]["llmRetry"] == {
        "attempt": 2, "max_attempts": 7, "delay": 4.0, "reason": "429", "error": "rate limited", "status_code": 429,
        "discard_text": True}
    text = "".join(u["content"]["text"] for u in sent if u["sessionUpdate"] == "agent_message_chunk")
    assert text == "Hello world."


def test_a_retry_that_answers_otherwise_is_set_apart_and_one_without_text_changes_nothing() -> None:
    feed = Feed()
    sent = updates(feed(
        StreamingDeltaEvent(content="Let me"), retry(True), StreamingDeltaEvent(content="Sure"),
        MessageEvent(role="assistant", content="Sure."),
        retry(False), MessageEvent(role="assistant", content="Next."),
    ))
    assert [u["content"]["text"] for u in sent if u["sessionUpdate"] == "agent_message_chunk"] == [
        "Let me", "\n\nSure", ".", "\n\nNext."]


def test_thinking_is_a_thought_chunk() -> None:
    feed = Feed()
    assert updates(feed(StreamingDeltaEvent(content="hmm", channel="thought", **SUB))) == [
        {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}, "_meta": SUB_META}]


def test_the_clients_prompt_is_not_echoed_but_other_user_messages_and_replays_are() -> None:
    feed = Feed()
    feed.projection.expect_prompt("Go.")
    assert updates(feed(MessageEvent(role="user", source="user", content="Go."))) == []
    assert updates(feed(MessageEvent(role="user", source="user", content="From the REST API."))) == [
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "From the REST API."}}]
    assert len(updates(feed(MessageEvent(role="user", source="user", content="Go."), replaying=True))) == 1


def test_a_cancelled_call_is_failed_on_the_v1_wire_and_says_it_was_cancelled() -> None:
    feed = Feed()
    closing = updates(feed(action("terminal", "c1", SUB, command="x"),
                           observation("terminal", "c1", "The tool call was stopped before it ran.", SUB, is_error=True, status="cancelled")))[-1]
    assert closing["status"] == "failed"
    assert closing["_meta"] == {**SUB_META, "taskwire": {"subagentId": "sub-1", "toolName": "terminal", "status": "cancelled"}}


def test_the_end_of_a_run_closes_open_calls_by_the_closing_rule_each_with_its_stamp() -> None:
    feed = Feed()
    feed(
        action("task", "call_task", description="Sub", prompt="p"),
        ACPToolCallEvent(tool_call_id="peer-1", title="Bash", status="pending", tool_kind="execute", **SUB),
        ACPToolCallEvent(tool_call_id="peer-2", title="Read", status="in_progress", tool_kind="read", **SUB),
    )
    outputs = feed(status("paused"))
    closing = updates(outputs)
    assert [(u["toolCallId"], u["status"], u["_meta"]["taskwire"]["status"]) for u in closing] == [
        ("peer-2", "failed", "failed"), ("peer-1", "failed", "cancelled"), ("call_task", "failed", "failed")]
    assert closing[0]["_meta"]["claudeCode"] == {"parentToolUseId": "call_task"}
    assert "parentToolUseId" not in closing[2]["_meta"]["claudeCode"]
    assert closing[1]["content"][-1]["content"]["text"] == "The tool call was stopped before it ran: the run was stopped."
    assert outputs[-1] == RunEnded(feed.seq, "paused")
    assert feed.projection.open_calls == []


def test_a_failed_run_ends_with_its_reason() -> None:
    feed = Feed()
    outputs = feed(status("running"), AgentErrorEvent(error="the model is down", code="llm_error"), status("error"))
    assert updates(outputs) == []  # live, the prompt's JSON-RPC error carries it
    assert outputs[-1] == RunEnded(3, "error", "the model is down", "llm_error")
    replayed = Feed()
    assert [u["content"]["text"] for u in updates(replayed(AgentErrorEvent(error="the model is down"), replaying=True))] == [
        "Error: the model is down"]


def test_usage_updates_need_the_context_window_and_count_the_last_calls_context() -> None:
    assert updates(Feed()(ConversationStateUpdateEvent(key="usage", value={"input_tokens": 10, "output_tokens": 2}))) == []
    feed = Feed(context_window=1000)
    first, second = updates(feed(
        ConversationStateUpdateEvent(key="usage", value={"input_tokens": 100, "output_tokens": 20, "cache_read_tokens": 0, "llm_calls": 1}),
        ConversationStateUpdateEvent(key="usage", value={"input_tokens": 250, "output_tokens": 30, "cache_read_tokens": 50, "llm_calls": 2}),
        ConversationStateUpdateEvent(key="usage", value={"input_tokens": 1}, **SUB),  # a sub-agent's context is not the session's
    ))
    assert (first["used"], first["size"], second["used"]) == (120, 1000, 210)


def test_a_peer_call_passes_its_states_and_an_agent_call_is_named_so() -> None:
    feed = Feed()
    shown = updates(feed(
        ACPToolCallEvent(tool_call_id="a1", title="Task", status="pending", tool_kind="think", raw_input={}),
        ACPToolCallEvent(tool_call_id="b1", title="Terminal", status="pending", tool_kind="weird",
                         content=[{"type": "terminal", "terminalId": "t1"}, {"type": "content", "content": {"type": "text", "text": "hi"}}]),
        SubagentStartedEvent(parent_tool_use_id="b1", subagent_id="s2", subagent_type="x"),
        ACPToolCallEvent(tool_call_id="b1", status="cancelled"),
    ))
    assert shown[0]["_meta"] == {"claudeCode": {"toolName": "Agent"}}
    assert (shown[1]["sessionUpdate"], shown[1]["kind"], shown[1]["content"]) == (
        "tool_call", "other", [{"type": "content", "content": {"type": "text", "text": "hi"}}])
    assert shown[2] == {"sessionUpdate": "tool_call_update", "toolCallId": "b1", "_meta": {"claudeCode": {"toolName": "Agent"}}}
    assert (shown[3]["sessionUpdate"], shown[3]["status"], shown[3]["_meta"]["taskwire"]) == ("tool_call_update", "failed", {"status": "cancelled"})


def test_a_result_after_the_closing_rule_corrects_the_call_without_restarting_it() -> None:
    feed = Feed()
    feed(action("terminal", "c1", SUB, command="x"), status("paused"))
    late = updates(feed(observation("terminal", "c1", "exit code: 0\n", SUB)))
    assert [(u["sessionUpdate"], u["status"]) for u in late] == [("tool_call_update", "completed")]
    assert late[0]["_meta"]["claudeCode"] == {"parentToolUseId": "call_task"}
