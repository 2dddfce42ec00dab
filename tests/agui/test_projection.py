"""The AG-UI projection without I/O: records in, ``(id, event)`` frames out."""

from __future__ import annotations

from typing import Any

from taskwire.agui import AguiProjection, SubagentInfo
from taskwire.events import (
    ACPToolCallEvent,
    ActionEvent,
    AgentErrorEvent,
    ConversationStateUpdateEvent,
    LLMRetryEvent,
    MessageEvent,
    ObservationEvent,
    StreamingDeltaEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
)
from tests.agui.checks import Log, assert_valid, types, wire

THREAD = "thread-1"
USAGE = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "llm_calls": 0}


def feed(projection: AguiProjection, *records: str) -> list[tuple[int, dict[str, Any]]]:
    return [frame for record in records for frame in projection.receive(record)]


def status(value: str) -> ConversationStateUpdateEvent:
    return ConversationStateUpdateEvent(key="status", value=value)


def usage(tokens_in: int, tokens_out: int, calls: int, cached: int = 0) -> ConversationStateUpdateEvent:
    value = {"input_tokens": tokens_in, "output_tokens": tokens_out, "cache_read_tokens": cached, "llm_calls": calls}
    return ConversationStateUpdateEvent(key="usage", value=value)


def events_of(frames: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [event for _, event in frames]


# -- ids, runs --------------------------------------------------------------------------------


def test_a_records_events_carry_the_seq_complete_through_and_the_last_its_own() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    frames = feed(projection, log(MessageEvent(role="user", source="user", content="hi")))
    assert [(sse_id, e["type"]) for sse_id, e in frames] == [
        (0, "RUN_STARTED"), (0, "TEXT_MESSAGE_START"), (0, "TEXT_MESSAGE_CONTENT"), (1, "TEXT_MESSAGE_END"),
    ]
    frames = feed(projection, log(MessageEvent(content="hello")))
    assert [sse_id for sse_id, _ in frames] == [1, 1, 2]
    assert projection.cursor == 2


def test_the_last_event_of_a_record_names_its_seq_for_clients_that_drop_sse_ids() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    frames = feed(projection, log(ActionEvent(tool_name="think", tool_call_id="c1", arguments={})))
    assert [e.get("metadata") for _, e in frames] == [None, None, None, {"taskwire": {"seq": 1}}]


def test_ephemeral_deltas_carry_the_cursor() -> None:
    log, projection = Log(start=7), AguiProjection(THREAD, after_seq=7)
    frames = feed(projection, log(StreamingDeltaEvent(content="a")), log(StreamingDeltaEvent(content="b")))
    assert {sse_id for sse_id, _ in frames} == {7}


def test_a_record_while_no_run_is_open_opens_one_named_by_its_event_id() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    first = MessageEvent(role="user", source="user", content="hi")
    frames = feed(projection, log(first))
    assert frames[0][1] == {"type": "RUN_STARTED", "threadId": THREAD, "runId": first.id, "timestamp": frames[0][1]["timestamp"]}
    assert projection.run_open


def test_the_first_run_takes_the_name_the_client_gave() -> None:
    log, projection = Log(), AguiProjection(THREAD, run_id="resumed-run")
    assert events_of(feed(projection, log(status("running"))))[0]["runId"] == "resumed-run"
    feed(projection, log(status("finished")))
    assert events_of(feed(projection, log(status("running"))))[0]["runId"] != "resumed-run"


def test_the_roots_status_ends_the_run_finished_paused_error() -> None:
    log = Log()
    for value, end in [
        ("finished", {"type": "RUN_FINISHED", "threadId": THREAD, "runId": "r", "outcome": {"type": "success"}}),
        ("paused", {"type": "RUN_FINISHED", "threadId": THREAD, "runId": "r", "outcome": {"type": "cancelled"}}),
        ("error", {"type": "RUN_ERROR", "message": "the run failed"}),
    ]:
        projection = AguiProjection(THREAD, run_id="r")
        frames = feed(projection, log(status("running")), log(status(value)))
        last = events_of(frames)[-1]
        last.pop("timestamp")
        assert last.pop("metadata") == {"taskwire": {"seq": log.seq}}  # the point to resume after
        assert last == end
        assert not projection.run_open and projection.runs_ended == 1
        assert_valid(events_of(frames))


def test_a_failed_run_reports_the_roots_last_agent_error() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    frames = feed(
        projection,
        log(status("running")),
        log(AgentErrorEvent(error="model unreachable", code="llm_error")),
        log(status("error")),
    )
    sent = events_of(frames)
    assert sent[-3] == {"type": "CUSTOM", "name": "taskwire.agent_error",
                        "value": {"error": "model unreachable", "code": "llm_error"},
                        "metadata": {"taskwire": {"seq": 2}}, "timestamp": sent[-3]["timestamp"]}
    assert sent[-1]["type"] == "RUN_ERROR" and sent[-1]["message"] == "model unreachable" and sent[-1]["code"] == "llm_error"


def test_a_sub_agents_status_never_ends_the_run() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    feed(projection, log(SubagentStartedEvent(), "sub-1", "call-1"))
    frames = feed(projection, log(status("finished"), "sub-1", "call-1"))
    assert types(frames) == ["CUSTOM"] and frames[0][1]["subagentRunId"] == "sub-1"
    assert projection.run_open


def test_the_run_ends_with_the_finish_message_as_its_result() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    frames = feed(
        projection,
        log(ActionEvent(tool_name="finish", tool_call_id="c1", arguments={"message": "All done."})),
        log(status("finished")),
    )
    assert events_of(frames)[-1]["result"] == "All done."


# -- text -------------------------------------------------------------------------------------


def test_deltas_stream_one_message_and_the_stored_answer_only_ends_it() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    first = StreamingDeltaEvent(content="Hel")
    frames = feed(projection, log(first), log(StreamingDeltaEvent(content="lo")), log(MessageEvent(content="Hello")))
    sent = events_of(frames)[1:]
    assert [(e["type"], e.get("delta")) for e in sent] == [
        ("TEXT_MESSAGE_START", None), ("TEXT_MESSAGE_CONTENT", "Hel"), ("TEXT_MESSAGE_CONTENT", "lo"), ("TEXT_MESSAGE_END", None),
    ]
    assert {e["messageId"] for e in sent} == {first.id}


def test_text_the_deltas_missed_is_added_before_the_end() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    frames = feed(projection, log(StreamingDeltaEvent(content="Hel")), log(MessageEvent(content="Hello!")))
    assert [(e["type"], e.get("delta")) for e in events_of(frames)[3:]] == [
        ("TEXT_MESSAGE_CONTENT", "lo!"), ("TEXT_MESSAGE_END", None),
    ]


def test_segments_streamed_between_calls_and_stored_joined_are_not_shown_twice() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    frames = feed(
        projection,
        log(StreamingDeltaEvent(content="First.")),
        log(ACPToolCallEvent(tool_call_id="t1", title="echo", status="pending", raw_input={"command": "echo"})),
        log(StreamingDeltaEvent(content="Second.")),
        log(MessageEvent(content="First.\n\nSecond.")),
    )
    texts = [e["delta"] for e in events_of(frames) if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert texts == ["First.", "Second."]
    assert_valid(events_of(frames))


def test_a_retry_ends_the_failed_attempts_text_names_it_to_drop_and_the_retry_streams_anew() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    failed = StreamingDeltaEvent(content="Hel")
    again = StreamingDeltaEvent(content="Hello")
    retry = LLMRetryEvent(attempt=2, max_attempts=7, delay=4, reason="429", error="rate limited",
                          status_code=429, discard_text=True)
    frames = feed(projection, log(ActionEvent(tool_name="task", tool_call_id="call-a", arguments={})),
                  log(failed, "sub-a", "call-a"), log(retry, "sub-a", "call-a"), log(again, "sub-a", "call-a"),
                  log(MessageEvent(content="Hello"), "sub-a", "call-a"), log(status("finished")))
    sent = events_of(frames)
    assert_valid(sent)
    [custom] = [e for e in sent if e.get("name") == "taskwire.llm_retry"]
    assert custom["subagentRunId"] == "sub-a"
    assert custom["value"] == {"attempt": 2, "maxAttempts": 7, "delay": 4, "reason": "429", "error": "rate limited",
                               "statusCode": 429, "discardMessageId": failed.id}
    # What is left once the dropped message is dropped: the answer, once.
    kept = [e["delta"] for e in sent if e["type"] == "TEXT_MESSAGE_CONTENT" and e["messageId"] != failed.id]
    assert kept == ["Hello"]


def test_a_message_without_deltas_is_one_start_content_end_with_its_role() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    message = MessageEvent(role="system", content="Be brief.")
    sent = events_of(feed(projection, log(message)))[1:]
    assert [(e["type"], e.get("role"), e.get("delta")) for e in sent] == [
        ("TEXT_MESSAGE_START", "system", None), ("TEXT_MESSAGE_CONTENT", None, "Be brief."), ("TEXT_MESSAGE_END", None, None),
    ]
    assert {e["messageId"] for e in sent} == {message.id}


def test_thought_deltas_are_reasoning_closed_by_the_next_record_of_their_lane() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    frames = feed(
        projection,
        log(StreamingDeltaEvent(content="hmm", channel="thought")),
        log(StreamingDeltaEvent(content="Answer", channel="text")),
        log(MessageEvent(content="Answer")),
    )
    assert types(frames)[1:] == [
        "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END",
        "REASONING_END", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
    ]


def test_the_message_this_run_sent_is_not_echoed_and_the_run_ends_only_after_it() -> None:
    log, projection = Log(), AguiProjection(THREAD, sent_message="Go.")
    start = projection.start_run("run-1")
    frames = feed(
        projection,
        log(status("finished")),  # an earlier run's end, published before our message
        log(MessageEvent(role="user", source="user", content="Go.")),
        log(status("running")),
        log(MessageEvent(content="Went.")),
        log(status("finished")),
    )
    assert [e["type"] for _, e in start] == ["RUN_STARTED"] and start[0][1]["runId"] == "run-1"
    assert types(frames) == ["CUSTOM", "CUSTOM", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
                             "CUSTOM", "RUN_FINISHED"]
    assert projection.runs_ended == 1


# -- tool calls -------------------------------------------------------------------------------


def test_calls_of_one_response_hang_off_its_text_message() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    first = ActionEvent(tool_name="task", tool_call_id="c1", arguments={"prompt": "a"}, thought="Two at once.", llm_response_id="r1")
    second = ActionEvent(tool_name="task", tool_call_id="c2", arguments={"prompt": "b"}, llm_response_id="r1")
    sent = events_of(feed(projection, log(first), log(second)))[1:]
    assert [e["type"] for e in sent] == [
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
        "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
    ]
    starts = [e for e in sent if e["type"] == "TOOL_CALL_START"]
    assert [(s["toolCallId"], s["toolCallName"], s["parentMessageId"]) for s in starts] == [("c1", "task", first.id), ("c2", "task", first.id)]
    assert [e["delta"] for e in sent if e["type"] == "TOOL_CALL_ARGS"] == ['{"prompt": "a"}', '{"prompt": "b"}']


def test_an_observation_is_the_calls_result_with_its_status() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    observation = ObservationEvent(tool_name="terminal", tool_call_id="c1", content="boom", is_error=True, status="failed")
    (_, result), = feed(projection, log(observation))[1:]
    assert result == {
        "type": "TOOL_CALL_RESULT", "messageId": observation.id, "toolCallId": "c1", "content": "boom", "role": "tool",
        "metadata": {"taskwire": {"status": "failed", "is_error": True, "seq": 1}}, "timestamp": result["timestamp"],
    }


def test_a_peer_call_starts_once_ends_its_arguments_once_its_input_is_known_and_answers_once() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    updates = [
        ACPToolCallEvent(tool_call_id="t1", title="Terminal", status="pending", tool_kind="execute", raw_input={}),
        ACPToolCallEvent(tool_call_id="t1", title="echo hi", status="pending", tool_kind="execute", raw_input={"command": "echo hi"}),
        ACPToolCallEvent(tool_call_id="t1", title="echo hi", status="in_progress", raw_input={"command": "echo hi"}),
        ACPToolCallEvent(tool_call_id="t1", title="echo hi", status="completed", raw_output="hi"),
        ACPToolCallEvent(tool_call_id="t1", title="echo hi", status="completed", raw_output="hi", content=[]),
    ]
    per_update = [types(projection.receive(log(u))) for u in updates]
    assert per_update == [
        ["RUN_STARTED", "TOOL_CALL_START"], ["TOOL_CALL_ARGS", "TOOL_CALL_END"], [], ["TOOL_CALL_RESULT"], [],
    ]


def test_a_peer_calls_result_is_its_content_text_else_its_raw_output() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    content = [{"type": "content", "content": {"type": "text", "text": "from blocks"}}]
    frames = feed(
        projection,
        log(ACPToolCallEvent(tool_call_id="a", status="completed", content=content, raw_output={"x": 1})),
        log(ACPToolCallEvent(tool_call_id="b", status="failed", raw_output={"x": 1}, is_error=True)),
    )
    results = [e for e in events_of(frames) if e["type"] == "TOOL_CALL_RESULT"]
    assert [(r["content"], r["metadata"]["taskwire"]) for r in results] == [
        ("from blocks", {"status": "completed", "seq": 1}), ('{"x": 1}', {"status": "failed", "is_error": True, "seq": 2}),
    ]


# -- sub-agents -------------------------------------------------------------------------------


def test_sub_agent_lifecycle_and_every_event_of_it_carries_its_run_id() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    frames = feed(
        projection,
        log(ActionEvent(tool_name="task", tool_call_id="call-a", arguments={})),
        log(SubagentStartedEvent(subagent_type="explore", description="Look around"), "sub-a", "call-a"),
        log(ActionEvent(tool_name="task", tool_call_id="call-n", arguments={}), "sub-a", "call-a"),
        log(SubagentStartedEvent(parent_subagent_id="sub-a"), "sub-n", "call-n"),
        log(ObservationEvent(tool_name="terminal", tool_call_id="x", content="ok"), "sub-n", "call-n"),
        log(SubagentFinishedEvent(status="completed", result="found it"), "sub-n", "call-n"),
        log(SubagentFinishedEvent(status="error", result="it broke"), "sub-a", "call-a"),
        log(status("finished")),
    )
    sent = events_of(frames)
    assert_valid(sent)
    starts = [e for e in sent if e["type"] == "SUBAGENT_STARTED"]
    assert [(s["subagentRunId"], s["name"], s.get("description"), s["parentToolCallId"], s.get("parentSubagentRunId"))
            for s in starts] == [("sub-a", "explore", "Look around", "call-a", None), ("sub-n", "general-purpose", None, "call-n", "sub-a")]
    ends = [(e["type"], e["subagentRunId"], e.get("result") or e.get("message"), e.get("code")) for e in sent
            if e["type"] in ("SUBAGENT_FINISHED", "SUBAGENT_ERROR")]
    assert ends == [("SUBAGENT_FINISHED", "sub-n", "found it", None), ("SUBAGENT_ERROR", "sub-a", "it broke", "error")]
    nested = next(e for e in sent if e["type"] == "TOOL_CALL_RESULT")
    assert nested["subagentRunId"] == "sub-n"
    assert all("subagentRunId" not in e for e in sent if e.get("toolCallId") == "call-a")


def test_a_cancelled_sub_agent_is_a_sub_agent_error_that_says_so() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    feed(projection, log(SubagentStartedEvent(), "s", "c"))
    (_, end), = feed(projection, log(SubagentFinishedEvent(status="cancelled", result=""), "s", "c"))
    assert (end["type"], end["code"], end["message"], end["metadata"]["taskwire"]["status"]) == (
        "SUBAGENT_ERROR", "cancelled", "the sub-agent ended: cancelled", "cancelled",
    )


def test_a_resumed_stream_restates_the_sub_agents_still_open_ancestors_first() -> None:
    tree = [
        SubagentInfo("sub-n", "general-purpose", "inner", "call-n", "sub-a", "running", "task-1.1"),
        SubagentInfo("sub-a", "explore", "outer", "call-a", None, "running", "task-1"),
    ]
    log, projection = Log(start=40), AguiProjection(THREAD, after_seq=40, subagents=tree)
    frames = feed(projection, log(ObservationEvent(tool_name="terminal", tool_call_id="x", content="ok"), "sub-n", "call-n"))
    sent = events_of(frames)
    assert [(e["type"], e.get("subagentRunId")) for e in sent] == [
        ("RUN_STARTED", None), ("SUBAGENT_STARTED", "sub-a"), ("SUBAGENT_STARTED", "sub-n"), ("TOOL_CALL_RESULT", "sub-n"),
    ]
    assert sent[1]["metadata"] == {"taskwire": {"label": "task-1", "restated": True}} and sent[2]["parentSubagentRunId"] == "sub-a"
    assert [sse_id for sse_id, _ in frames] == [40, 40, 40, 41]


def test_the_run_end_closes_what_it_left_open() -> None:
    log, projection = Log(), AguiProjection(THREAD, subagents=[SubagentInfo("done", status="completed")])
    frames = feed(
        projection,
        log(StreamingDeltaEvent(content="half a thought", channel="thought")),
        log(StreamingDeltaEvent(content="half an answer"), "sub", "call"),
        log(ACPToolCallEvent(tool_call_id="t1", status="pending")),
        log(ObservationEvent(tool_name="terminal", tool_call_id="y", content=""), "done", "call-d"),
        log(status("paused")),
    )
    sent = events_of(frames)
    assert_valid(sent)
    ends = {(e["type"], e.get("subagentRunId"), e.get("code")) for e in sent if e["type"].startswith("SUBAGENT_") and e["type"] != "SUBAGENT_STARTED"}
    assert ends == {("SUBAGENT_ERROR", "sub", "unfinished"), ("SUBAGENT_FINISHED", "done", None)}
    assert sent[-1]["outcome"] == {"type": "cancelled"}


# -- usage, state, other kinds ------------------------------------------------------------------


def test_run_usage_counts_the_roots_calls_since_it_started_running_and_its_sub_agents() -> None:
    log, projection = Log(), AguiProjection(THREAD, root_usage={**USAGE, "input_tokens": 1000, "llm_calls": 3})
    frames = feed(
        projection,
        log(status("running")),
        log(usage(1100, 20, 4, cached=50)),
        log(SubagentStartedEvent(), "sub", "call"),
        log(usage(30, 5, 1), "sub", "call"),
        log(SubagentFinishedEvent(result="ok", usage={**USAGE, "input_tokens": 40, "output_tokens": 6, "llm_calls": 2}), "sub", "call"),
        log(status("finished")),
    )
    sent = events_of(frames)
    assert sent[2] == {"type": "CUSTOM", "name": "taskwire.usage", "value": {"input_tokens": 1100, "output_tokens": 20,
                       "cache_read_tokens": 50, "llm_calls": 4}, "metadata": {"taskwire": {"seq": 2}},
                       "timestamp": sent[2]["timestamp"]}
    assert sent[-1]["usage"] == [{"inputTokens": 190, "outputTokens": 26, "totalTokens": 216, "cachedInputTokens": 50}]


def test_a_run_joined_midway_reports_no_usage_rather_than_a_guess() -> None:
    log, projection = Log(start=10), AguiProjection(THREAD, after_seq=10, root_usage=USAGE)
    frames = feed(projection, log(usage(100, 10, 1)), log(status("finished")))
    assert "usage" not in events_of(frames)[-1]


def test_other_state_keys_are_custom_events_named_for_the_key() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    (_, custom), = feed(projection, log(ConversationStateUpdateEvent(key="title", value="Demo")))[1:]
    assert (custom["type"], custom["name"], custom["value"]) == ("CUSTOM", "taskwire.title", "Demo")


def test_a_kind_this_server_does_not_know_passes_untranslated() -> None:
    projection = AguiProjection(THREAD)
    record = wire(id="e1", kind="PermissionRequestEvent", seq=1, subagent_id="s", request_id="q")
    sent = events_of(projection.receive(record))
    assert [e["type"] for e in sent] == ["RUN_STARTED", "SUBAGENT_STARTED", "RAW"]
    assert sent[-1]["event"]["request_id"] == "q" and sent[-1]["source"] == "taskwire" and sent[-1]["subagentRunId"] == "s"


def test_a_closed_stream_says_where_to_resume() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    feed(projection, log(status("running")))
    (sse_id, event), = projection.stream_closed("too_slow", "resume with after_seq=1")
    assert (sse_id, event["name"], event["value"]["lastEventId"]) == (1, "taskwire.stream_closed", 1)


def test_a_peer_call_reported_before_its_parent_keeps_its_opener_and_its_result_goes_to_the_sub_agent() -> None:
    log, projection = Log(), AguiProjection(THREAD)
    frames = feed(
        projection,
        log(SubagentStartedEvent(), "sub-b", "agent-b"),
        log(ACPToolCallEvent(tool_call_id="sub-b-1", title="echo sub-b", status="pending")),  # no parent named yet
        log(ACPToolCallEvent(tool_call_id="sub-b-1", status="in_progress"), "sub-b", "agent-b"),
        log(ACPToolCallEvent(tool_call_id="sub-b-1", status="completed", raw_output="sub-b"), "sub-b", "agent-b"),
    )
    sent = events_of(frames)
    assert_valid(sent)
    calls = [(e["type"], e.get("subagentRunId")) for e in sent if e.get("toolCallId") == "sub-b-1"]
    assert calls == [("TOOL_CALL_START", None), ("TOOL_CALL_ARGS", None), ("TOOL_CALL_END", None), ("TOOL_CALL_RESULT", "sub-b")]
