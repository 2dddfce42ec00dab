"""Records to spans, without a collector: the records of real runs through ``SpanBuilder``."""

from __future__ import annotations

import json
from pathlib import Path

from taskwire.events import (
    ActionEvent,
    ConversationStateUpdateEvent,
    Event,
    LLMRetryEvent,
    ObservationEvent,
    SubagentStartedEvent,
)
from taskwire.telemetry.otlp import SpanExport
from taskwire.specs import DEFAULT_SYSTEM_PROMPT
from taskwire.store.rows import event_record
from taskwire.telemetry.span_builder import SpanBuilder
from tests.servers import REPO, RunningServer, isolated_settings, taskwire_server
from tests.telemetry.runs import native_agent, recorded_claude_code, run_to_end, subagents, tree_records
from tests.telemetry.spans import Span, check_tree, from_span_data


async def build(server: RunningServer, conversation_id: str, *, capture_content: bool = False) -> list[Span]:
    builder = SpanBuilder(capture_content=capture_content)
    for record in await tree_records(server.app.state.store, conversation_id):
        builder.receive(record)
    assert builder.open_spans == 0
    return from_span_data(builder.spans_to_export())


async def test_subagent_runs_nest_under_the_task_calls_that_spawned_them(server: RunningServer) -> None:
    conversation_id = await run_to_end(server.client, native_agent())
    entries = await subagents(server.client, conversation_id)
    spans = await build(server, conversation_id)
    agents = check_tree(spans, conversation_id, entries)
    nested = [e for e in entries if e.get("parent_subagent_id")]
    assert len(entries) == 3 and len(nested) == 1  # two in parallel, one of them with its own
    leaf = agents[nested[0]["subagent_id"]]
    assert leaf.attributes["taskwire.parent_subagent_id"] == nested[0]["parent_subagent_id"]
    assert leaf.name == "invoke_agent general-purpose" and leaf.attributes["gen_ai.agent.name"] == "general-purpose"


async def test_each_llm_request_is_a_chat_span_with_model_tokens_and_finish_reason(server: RunningServer) -> None:
    conversation_id = await run_to_end(server.client, native_agent())
    spans = await build(server, conversation_id)
    chats = [s for s in spans if s.operation == "chat"]
    assert len(chats) == 9  # main 3, sub-agent A 2, its leaf 2, B 2
    for chat in chats:
        assert chat.name == "chat scripted" and chat.attributes["gen_ai.request.model"] == "scripted"
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0 and chat.attributes["gen_ai.usage.output_tokens"] > 0
        assert chat.attributes["gen_ai.response.finish_reasons"] == ["tool_use"]  # as the scripted model says it
    by_id = {s.span_id: s for s in spans}
    assert all(by_id[c.parent_id].operation == "invoke_agent" for c in chats)  # type: ignore[index]
    info = (await server.client.get(f"/api/conversations/{conversation_id}")).json()
    root_chats = [c for c in chats if "taskwire.subagent_id" not in c.attributes]
    assert sum(c.attributes["gen_ai.usage.input_tokens"] for c in root_chats) == info["usage"]["input_tokens"]


async def test_no_prompt_or_tool_content_unless_capture_is_asked(server: RunningServer) -> None:
    conversation_id = await run_to_end(server.client, native_agent())
    content = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
               "gen_ai.system_instructions"}
    assert not any(content & set(s.attributes) for s in await build(server, conversation_id))

    captured = await build(server, conversation_id, capture_content=True)
    terminal = next(s for s in captured if s.attributes.get("gen_ai.tool.call.id") == "call_main_0_0")
    assert json.loads(terminal.attributes["gen_ai.tool.call.arguments"]) == {"command": "echo main-agent"}
    assert "main-agent" in terminal.attributes["gen_ai.tool.call.result"]
    root = next(s for s in captured if s.parent_id is None)
    assert json.loads(root.attributes["gen_ai.input.messages"]) == [{"role": "user", "parts": [{"type": "text", "content": "go"}]}]
    first_chat = min((s for s in captured if s.operation == "chat" and s.parent_id == root.span_id), key=lambda s: s.attributes["taskwire.seq.first"])
    (message,) = json.loads(first_chat.attributes["gen_ai.output.messages"])
    assert message["finish_reason"] == "tool_use"
    assert message["parts"][0] == {"type": "text", "content": "First I'll run the command myself."}
    assert message["parts"][1]["type"] == "tool_call" and message["parts"][1]["name"] == "terminal"
    assert json.loads(first_chat.attributes["gen_ai.input.messages"]) == [{"role": "user", "parts": [{"type": "text", "content": "go"}]}]
    leaf = "Run `echo nested-leaf` with the terminal tool and report what it printed."
    leaf_chats = [s for s in captured if s.operation == "chat" and "taskwire.subagent_id" in s.attributes
                  and json.loads(s.attributes["gen_ai.input.messages"])[0]["parts"][0]["content"].endswith(leaf)]
    first_leaf_chat = min(leaf_chats, key=lambda s: s.attributes["taskwire.seq.first"])
    (prompt,) = json.loads(first_leaf_chat.attributes["gen_ai.input.messages"])  # the sub-agent's prompt, and only that
    assert prompt["role"] == "user"
    assert all("taskwire.input.partial" not in s.attributes for s in captured)
    # Every chat span says what system instructions it was given: the root's default, a sub-agent's its type's.
    chats = [s for s in captured if s.operation == "chat"]
    systems = {s.span_id: json.loads(s.attributes["gen_ai.system_instructions"]) for s in chats}
    assert len(systems) == len(chats)
    root_chats = [s for s in chats if "taskwire.subagent_id" not in s.attributes]
    assert {systems[s.span_id][0]["content"] for s in root_chats} == {DEFAULT_SYSTEM_PROMPT}
    general = (REPO / "config/agents/general-purpose.md").read_text().split("---", 2)[2].strip()
    assert systems[first_leaf_chat.span_id] == [{"type": "text", "content": general}]


async def test_a_bridged_peers_subagents_nest_under_its_agent_calls(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        conversation_id = await run_to_end(server.client, recorded_claude_code(), "Run echo main-agent, then two sub-agents.")
        entries = await subagents(server.client, conversation_id)
        spans = await build(server, conversation_id)
    assert {e["parent_tool_use_id"] for e in entries} == {"toolu_main_1_1_0007", "toolu_main_1_2_0008"}
    check_tree(spans, conversation_id, entries)
    calls = {s.attributes["gen_ai.tool.call.id"]: s for s in spans if s.operation == "execute_tool"}
    assert set(calls) == {"toolu_main_0_1_0004", "toolu_main_1_1_0007", "toolu_main_1_2_0008", "toolu_subagenta_0_0_0011", "toolu_subagentb_0_0_0014"}
    assert calls["toolu_main_1_1_0007"].name == "execute_tool Task"
    assert calls["toolu_main_1_1_0007"].attributes["taskwire.tool_call.title"] == "Echo subagent-a"
    assert all(s.attributes["taskwire.tool_call.status"] == "completed" for s in calls.values())
    assert not [s for s in spans if s.operation == "chat"]  # the peer's own model calls are not ours to see


async def test_claude_sdk_subagents_nest_the_same_way(tmp_path: Path) -> None:
    recording = Path(__file__).parents[1] / "claude_sdk" / "two_subagents.sdk.jsonl"
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        conversation_id = await run_to_end(server.client, {"kind": "claude_sdk", "replay": str(recording)})
        entries = await subagents(server.client, conversation_id)
        spans = await build(server, conversation_id)
    assert {e["parent_tool_use_id"] for e in entries} == {"toolu_main_1_1_0005", "toolu_main_1_2_0006"}
    agents = check_tree(spans, conversation_id, entries)
    for agent in agents.values():
        assert [s.operation for s in spans if s.parent_id == agent.span_id] == ["execute_tool"]


def test_failed_and_cancelled_calls_and_subagents_are_errors() -> None:
    root = "root-1"
    events: list[tuple[str, Event]] = [
        (root, ConversationStateUpdateEvent(key="status", value="running")),
        (root, ActionEvent(tool_name="terminal", tool_call_id="c1")),
        (root, ActionEvent(tool_name="task", tool_call_id="c2")),
        (root, ActionEvent(tool_name="think", tool_call_id="c3")),
        ("sub-1", _stamped(SubagentStartedEvent(), "c2", "sub-1")),
        ("sub-1", _stamped(ConversationStateUpdateEvent(key="status", value="running"), "c2", "sub-1")),
        (root, ObservationEvent(tool_name="terminal", tool_call_id="c1", is_error=True, status="failed", content="exit 1")),
        (root, ObservationEvent(tool_name="think", tool_call_id="c3", is_error=True, status="cancelled")),
        (root, ConversationStateUpdateEvent(key="status", value="paused")),  # interrupted: sub-1 and c2 never closed
    ]
    builder = SpanBuilder()
    for seq, (conversation_id, event) in enumerate(events, start=1):
        event.seq = seq
        builder.receive(event_record(conversation_id, root, event))
    spans = {s.name: s for s in from_span_data(builder.spans_to_export())}
    assert builder.open_spans == 0
    assert spans["execute_tool terminal"].status == "ERROR" and spans["execute_tool terminal"].attributes["error.type"] == "failed"
    assert spans["execute_tool think"].status == "ERROR" and spans["execute_tool think"].attributes["error.type"] == "cancelled"
    for unfinished in ("execute_tool task", "invoke_agent general-purpose"):
        assert spans[unfinished].attributes["taskwire.unfinished"] is True and spans[unfinished].status == "ERROR"
    run = spans["invoke_agent"]
    assert run.status == "UNSET" and run.attributes["taskwire.run.status"] == "paused"
    assert run.attributes["taskwire.seq.first"] == 1 and run.attributes["taskwire.seq.last"] == len(events)


def test_a_retried_request_is_one_chat_span_with_an_event_per_retry() -> None:
    root = "root-1"
    added = {"model": "m", "input_tokens": 5, "output_tokens": 2, "llm_calls": 1, "started_at": "2026-01-01T00:00:00Z"}
    events: list[tuple[str, Event]] = [
        (root, ConversationStateUpdateEvent(key="status", value="running")),
        (root, ActionEvent(tool_name="task", tool_call_id="c1")),
        ("sub-1", _stamped(SubagentStartedEvent(), "c1", "sub-1")),
        ("sub-1", _stamped(LLMRetryEvent(attempt=2, max_attempts=7, delay=4, reason="429", error="rate limited",
                                         status_code=429), "c1", "sub-1")),
        ("sub-1", _stamped(LLMRetryEvent(attempt=3, max_attempts=7, delay=2, reason="connection", error="reset"), "c1", "sub-1")),
        ("sub-1", _stamped(ConversationStateUpdateEvent(key="usage", value={"added": added}), "c1", "sub-1")),
        (root, ConversationStateUpdateEvent(key="usage", value={"added": added})),
        (root, ConversationStateUpdateEvent(key="status", value="finished")),
    ]
    builder = SpanBuilder()
    for seq, (conversation_id, event) in enumerate(events, start=1):
        event.seq = seq
        builder.receive(event_record(conversation_id, root, event))
    chats = {s.attributes.get("taskwire.subagent_id"): s for s in builder.spans_to_export() if s.name == "chat m"}
    assert chats[None].events == []
    retried = chats["sub-1"]
    assert [(e.name, e.attributes["taskwire.retry.attempt"], e.attributes["error.type"]) for e in retried.events] == [
        ("gen_ai.retry", 2, "429"), ("gen_ai.retry", 3, "connection")]
    assert retried.events[0].attributes["taskwire.retry.status_code"] == 429
    exported = SpanExport("replica", exporter=object()).readable(retried)  # type: ignore[arg-type]
    assert [e.name for e in exported.events] == ["gen_ai.retry", "gen_ai.retry"]


def test_past_its_bound_the_builder_drops_spans_and_counts_them() -> None:
    builder = SpanBuilder(max_open_spans=2)
    events: list[Event] = [ConversationStateUpdateEvent(key="status", value="running")]
    events += [ActionEvent(tool_name="think", tool_call_id=f"c{n}") for n in range(3)]
    events.append(ConversationStateUpdateEvent(key="status", value="finished"))
    for seq, event in enumerate(events, start=1):
        event.seq = seq
        builder.receive(event_record("root-1", "root-1", event))
    assert builder.dropped == 2 and len(builder.spans_to_export()) == 2 and builder.open_spans == 0


def _stamped(event: Event, parent_tool_use_id: str, subagent_id: str) -> Event:
    event.parent_tool_use_id, event.subagent_id = parent_tool_use_id, subagent_id
    return event
