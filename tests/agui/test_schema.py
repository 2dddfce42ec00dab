"""Every AG-UI event the projection emits fits @ag-ui/core's zod schemas (validated in Node),
over runs that make every taskwire event kind: a native run, the recorded Claude Code
transcripts replayed through the real ACP and Claude SDK backends, and ACP sub-agents with text."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

from taskwire.agui import AguiProjection, SubagentInfo
from taskwire.events import (
    EVENT_KINDS,
    LLMRetryEvent,
    ACPToolCallEvent,
    ConversationStateUpdateEvent,
    MessageEvent,
    ObservationEvent,
    PermissionRequestEvent,
    PermissionResolvedEvent,
    StreamingDeltaEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
)
from taskwire.permissions.requests import NATIVE_OPTIONS
from tests.acp.helpers import FIXTURE as ACP_RECORDING
from tests.acp.helpers import fake_agent
from tests.agui.checks import Log, assert_valid, wire
from tests.agui.client import assert_accepted, events, run_client
from tests.api.helpers import all_events, scripted_agent
from tests.servers import REPO, isolated_settings, taskwire_server

HERE = Path(__file__).parent
SDK_RECORDING = REPO / "tests" / "claude_sdk" / "two_subagents.sdk.jsonl"
EVERY_TYPE = {
    "RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
    "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "CUSTOM", "RAW",
    "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END",
    "SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR",
}
"""Every AG-UI type the projection makes."""


def run(thread: str, run_id: str, message: str, agent: dict[str, Any] | None = None) -> dict[str, Any]:
    props = {"taskwire": {"agent": agent}} if agent is not None else {}
    return {"op": "run", "threadId": thread, "runId": run_id, "message": message, "forwardedProps": props}


def every_branch() -> list[dict[str, Any]]:
    """Events from the projection's rarer paths (a resumed stream, a paused run, reasoning, a
    kind from a newer server, a stream closed early), made without a server."""
    log = Log(start=10)
    tree = [SubagentInfo("old", "explore", "started before the stream", "call-old", None, "running")]
    projection = AguiProjection("thread-x", after_seq=10, subagents=tree, root_usage={"input_tokens": 5, "llm_calls": 1})
    made = []
    for record in [
        log(ConversationStateUpdateEvent(key="status", value="running")),
        log(StreamingDeltaEvent(content="thinking", channel="thought")),
        log(StreamingDeltaEvent(content="Partial")),
        log(StreamingDeltaEvent(content="Half an ans")),
        log(LLMRetryEvent(attempt=2, max_attempts=7, delay=4, reason="429", error="rate limited", status_code=429,
                          discard_text=True)),
        log(MessageEvent(content="Partial answer.")),
        log(MessageEvent(role="system", content="A note.")),
        log(ObservationEvent(tool_name="terminal", tool_call_id="c-old", content="late"), "old", "call-old"),
        log(SubagentStartedEvent(), "gone", "call-gone"),
        log(SubagentFinishedEvent(status="cancelled", result="cancelled"), "gone", "call-gone"),
        log(SubagentStartedEvent(), "open", "call-open"),
        log(ACPToolCallEvent(tool_call_id="p1", title="Terminal", status="pending", tool_kind="execute", raw_input={})),
        log(ACPToolCallEvent(tool_call_id="p2", title="Read", status="failed", raw_output={"error": "no"}, is_error=True)),
        log(PermissionRequestEvent(request_id="q1", tool_call_id="p1", tool_name="Bash", options=list(NATIVE_OPTIONS)), "open", "call-open"),
        log(PermissionResolvedEvent(request_id="q1", tool_call_id="p1", outcome="rejected", option_id="reject_once"), "open", "call-open"),
        log(ConversationStateUpdateEvent(key="pending_permissions", value=[])),
        wire(id=str(uuid.uuid4()), kind="SomeNewerEvent", seq=log.seq + 1, detail="q1"),
        log(ConversationStateUpdateEvent(key="usage", value={"input_tokens": 25, "output_tokens": 4, "llm_calls": 2})),
        log(ConversationStateUpdateEvent(key="status", value="paused")),
        log(MessageEvent(role="user", source="user", content="Again.")),
    ]:
        made += [event for _, event in projection.receive(record)]
    made += [event for _, event in projection.stream_closed("too_slow", "resume with after_seq=26")]
    assert_valid(made[:-1] + [{"type": "RUN_FINISHED"}])
    return made


async def test_every_event_of_every_kind_fits_the_ag_ui_schemas(tmp_path: Path) -> None:
    native, sdk, acp, acp_text = (str(uuid.uuid4()) for _ in range(4))
    replayer = [str(HERE / "acp_replay_agent.py"), str(ACP_RECORDING)]
    acp_spec = {"kind": "acp", "command": sys.executable, "args": replayer, "startup_timeout": 30, "idle_timeout": 60}
    synthetic = every_branch()
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        steps = await run_client(
            server,
            run(native, "native-1", "Go.", scripted_agent(str(HERE / "scripts" / "every_kind.yaml"))),
            run(native, "native-2", "Once more."),
            run(sdk, "sdk-1", "Run echo main-agent, then two sub-agents.", {"kind": "claude_sdk", "replay": str(SDK_RECORDING)}),
            run(acp, "acp-1", "Run echo main-agent, then two sub-agents.", acp_spec),
            run(acp_text, "acp-2", "subagents", fake_agent(tmp_path)),
            {"op": "connect", "threadId": native, "query": "until=idle"},  # both runs, replayed
            {"op": "validate", "events": synthetic},
        )
        stored = set()
        for thread in (native, sdk, acp, acp_text):
            stored |= {e["kind"] for e in await all_events(server, thread, include_subagents="true")}

    native_1, native_2, sdk_run, acp_run, acp_text_run, replayed, made = steps
    for step in steps:
        assert step["schemaErrors"] == [], (step["op"], step["threadId"], step["schemaErrors"])
    for step in (native_1, sdk_run, acp_run, acp_text_run, replayed):
        assert_accepted(step)
    # The failed run is accepted up to its RUN_ERROR, which the client reports as the run's error.
    assert native_2["warnings"] == [] and events(native_2)[-1]["type"] == "RUN_ERROR"
    assert "the model is down for the main agent too" in events(native_2)[-1]["message"]
    # Deltas are never stored ...; the permission kinds come from every_branch() (a run that
    # asks needs a person to answer: tests/permissions/ make them for real), and so does the
    # retry (the scripted model never retries: tests/runtime/test_model_retries.py over HTTP).
    assert stored == set(EVENT_KINDS) - {"StreamingDeltaEvent", "PermissionRequestEvent", "PermissionResolvedEvent",
                                         "LLMRetryEvent"}
    contents = [e for e in events(native_1) if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert len({e["messageId"] for e in contents}) < len(contents)  # ... deltas streamed here
    emitted = {e["type"] for step in steps for e in events(step)}
    assert emitted == EVERY_TYPE
    for peer in (sdk_run, acp_run):  # Claude Code's sub-agents, bridged, come out as AG-UI sub-agents
        starts = [e for e in events(peer) if e["type"] == "SUBAGENT_STARTED"]
        assert len(starts) == 2 and all(e["parentToolCallId"].startswith("toolu_main_1_") for e in starts)
        tagged = {e["subagentRunId"] for e in events(peer) if e["type"] == "TOOL_CALL_START" and "subagentRunId" in e}
        assert tagged == {e["subagentRunId"] for e in starts}
