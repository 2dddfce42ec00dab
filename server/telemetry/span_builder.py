"""Stored records to a tree of spans, Sans-I/O: what a run looks like in a trace viewer.

Feed it every stored record of the trees a server runs, in ``seq`` order per tree
(``receive``); take the spans that ended (``spans_to_export``). One trace per run of a root:

- ``invoke_agent``: the root's run, from its ``running`` status to the status that ends it;
  a sub-agent, from its ``SubagentStartedEvent`` to its ``SubagentFinishedEvent``;
- ``execute_tool``: a tool call, from its ``ActionEvent`` (or first ``ACPToolCallEvent``, for a
  bridged peer) to its ``ObservationEvent`` (or terminal ``ACPToolCallEvent``); ``failed`` and
  ``cancelled`` are errors;
- ``chat``: an LLM request taskwire made itself, from the ``usage`` update after it
  (``value["added"]``: model, tokens, finish reason, start time), with an event for each
  retry it took (``server/telemetry/chat_spans.py``). A bridged peer's own model calls are not
  seen one by one, so they make no ``chat`` span. With content capture, its input is the
  conversation's history then (``server/telemetry/chat_history.py``).

A sub-agent's ``invoke_agent`` span is the child of the ``execute_tool`` span of the call that
spawned it (``gen_ai.tool.call.id`` = its ``parent_tool_use_id``), found in its parent's stream,
at any depth and for every backend. Ids derive from event ids (``server/telemetry/ids.py``).
"""

from __future__ import annotations

import json
from typing import Any

from ..events import EventRecord
from .chat_history import ChatHistory
from .chat_spans import ChatSpans
from .run_spans import RunSpans as _Run
from . import spans as a
from .ids import span_id_of, trace_id_of
from .spans import SpanData, clip, unix_ns

ENDS_RUN = {"finished", "paused", "error", "idle"}
TOOL_ERRORS = {"failed", "cancelled"}
TERMINAL_TOOL = {"completed", "failed", "cancelled"}
SUBAGENT_ERRORS = {"error", "cancelled"}
KINDS = {
    "ConversationStateUpdateEvent", "SubagentStartedEvent", "SubagentFinishedEvent", "ActionEvent",
    "ObservationEvent", "ACPToolCallEvent", "AgentErrorEvent", "LLMRetryEvent",
}
"""The kinds that shape spans; any other record is skipped without being parsed."""
MAX_WAITING_INPUTS = 10_000
"""Roots whose user messages are kept for their next run's span (content capture)."""


class SpanBuilder(ChatSpans):
    """Builds spans from records; see the module docstring.

    After ``receive``, call ``spans_to_export`` for the spans that ended. ``close_all`` ends
    every open span (shutdown). At most ``max_open_spans`` are open at once; past that new
    spans are dropped and counted in ``dropped``.
    """

    def __init__(self, *, capture_content: bool = False, max_open_spans: int = 100_000) -> None:
        self.capture_content = capture_content
        self.max_open_spans = max_open_spans
        self.dropped = 0
        self._runs: dict[str, _Run] = {}
        self._inputs: dict[str, list[str]] = {}  # a root's user messages before its run (capture)
        self._history = ChatHistory() if capture_content else None  # each chat span's input
        self._open = 0
        self._ended: list[SpanData] = []
        self.kinds = KINDS | {"MessageEvent"} if capture_content else KINDS
        """The kinds it reads; a caller may skip any other before queueing it."""

    # -- input and output -----------------------------------------------------------------

    def receive(self, record: EventRecord) -> None:
        """One stored record (records without ``seq`` are ignored)."""
        if record.seq is None or record.kind not in self.kinds:
            return
        event = json.loads(record.json)
        run = self._runs.get(record.root_id)
        conversation_id = record.conversation_id
        if run is not None and conversation_id in run.chats:
            self._settle_chat(run, record, event)
        if self._history is not None:
            self._history.receive(record, event)
        kind = record.kind
        if kind == "ConversationStateUpdateEvent":
            if event.get("key") == "status" and conversation_id == record.root_id:
                self._root_status(record, event.get("value"))
            elif event.get("key") == "usage" and run is not None:
                self._usage(run, record, event.get("value"))
        elif run is None:
            if kind == "MessageEvent" and event.get("role") == "user" and conversation_id == record.root_id:
                self._inputs.setdefault(record.root_id, []).append(str(event.get("content", "")))
                if len(self._inputs) > MAX_WAITING_INPUTS:  # conversations sent messages that never ran
                    self._inputs.pop(next(iter(self._inputs)))
        elif kind == "ActionEvent":
            span = self._tool_started(run, record, event, str(event.get("tool_name")))
            if span is not None and self.capture_content:
                span.attributes[a.TOOL_ARGUMENTS] = clip(json.dumps(event.get("arguments") or {}, ensure_ascii=False))
        elif kind == "ObservationEvent":
            status = event.get("status") or ("failed" if event.get("is_error") else "completed")
            self._tool_ended(run, record, event, status, event.get("content"))
        elif kind == "ACPToolCallEvent":
            self._peer_tool_call(run, record, event)
        elif kind == "SubagentStartedEvent":
            self._subagent_started(run, record, event)
        elif kind == "SubagentFinishedEvent":
            self._subagent_finished(run, record, event)
        elif kind == "AgentErrorEvent":
            span = run.agents.get(conversation_id)
            if span is not None:
                span.error = str(event.get("error") or "agent error")
                span.attributes[a.ERROR_TYPE] = str(event.get("code") or "agent_error")
        elif kind == "MessageEvent":
            self._message(run, record, event)
        elif kind == "LLMRetryEvent":
            self._llm_retry(run, record, event)

    def spans_to_export(self) -> list[SpanData]:
        """The spans that ended since the last call, in the order they ended."""
        ended, self._ended = self._ended, []
        return ended

    def close_all(self, end_ns: int) -> None:
        """End every open span at ``end_ns``, marked ``taskwire.unfinished`` (shutdown)."""
        for root_id in list(self._runs):
            self._end_run(root_id, end_ns, None, status=None)

    @property
    def open_spans(self) -> int:
        return self._open

    # -- runs -----------------------------------------------------------------------------

    def _root_status(self, record: EventRecord, status: Any) -> None:
        root_id = record.root_id
        end = unix_ns(record.timestamp)
        if status == "running":
            if root_id in self._runs:  # a run that never ended (its process died): close it first
                self._end_run(root_id, end, record.seq, status=None)
            run = _Run(trace_id=trace_id_of(record.id))
            if self._history is not None:
                self._history.running(root_id)
            span = self._start(run, "invoke_agent", record, parent=None)
            if span is not None:
                span.attributes[a.OPERATION] = "invoke_agent"
                span.attributes[a.AGENT_ID] = root_id
                inputs = self._inputs.pop(root_id, None)
                if self.capture_content and inputs:
                    span.attributes[a.INPUT_MESSAGES] = _messages("user", inputs)
                run.agents[root_id] = span
            self._runs[root_id] = run
        elif status in ENDS_RUN and root_id in self._runs:
            self._end_run(root_id, end, record.seq, status=str(status))

    def _end_run(self, root_id: str, end_ns: int, seq: int | None, *, status: str | None) -> None:
        run = self._runs.pop(root_id)
        if self._history is not None:
            self._history.idle(root_id)
            for conversation_id in run.agents:
                if conversation_id != root_id:
                    self._history.forget(conversation_id)
        for conversation_id in list(run.chats):
            self._end_chat(run, conversation_id)
        for span in list(run.tools.values()):
            span.attributes[a.UNFINISHED] = True
            self._end(span, end_ns, None, error="ended with its run, never closed")
        run.tools.clear()
        root = run.agents.pop(root_id, None)
        for span in list(run.agents.values()):
            span.attributes[a.UNFINISHED] = True
            self._end(span, end_ns, None, error="ended with its run, never finished")
        if root is not None:
            if status is None:
                root.attributes[a.UNFINISHED] = True
            else:
                root.attributes[a.RUN_STATUS] = status
            error = (root.error or "the run ended in error") if status == "error" else None
            if status != "error":
                root.error = None  # an agent error the run recovered from is no failure of the run
                root.attributes.pop(a.ERROR_TYPE, None)
            self._end(root, end_ns, seq, error=error)

    # -- sub-agents -----------------------------------------------------------------------

    def _subagent_started(self, run: _Run, record: EventRecord, event: dict[str, Any]) -> None:
        subagent_id = record.conversation_id
        parent_conversation = event.get("parent_subagent_id") or record.root_id
        parent_call = record.parent_tool_use_id or ""
        # The execute_tool span of the spawning call, in the parent's stream; failing that (a
        # peer's sub-agent whose call it never reported), the parent agent itself.
        parent = run.calls.get((parent_conversation, parent_call))
        if parent is None:
            parent_span = run.agents.get(parent_conversation) or run.agents.get(record.root_id)
            parent = parent_span.span_id if parent_span is not None else None
        subagent_type = str(event.get("subagent_type") or "general-purpose")
        span = self._start(run, f"invoke_agent {subagent_type}", record, parent=parent)
        if span is None:
            return
        span.attributes.update({
            a.OPERATION: "invoke_agent",
            a.AGENT_NAME: subagent_type,
            a.AGENT_ID: subagent_id,
        })
        if event.get("description"):
            span.attributes[a.AGENT_DESCRIPTION] = str(event["description"])
        if event.get("parent_subagent_id"):
            span.attributes[a.PARENT_SUBAGENT_ID] = str(event["parent_subagent_id"])
        run.agents[subagent_id] = span

    def _subagent_finished(self, run: _Run, record: EventRecord, event: dict[str, Any]) -> None:
        span = run.agents.pop(record.conversation_id, None)
        if span is None:
            return
        status = str(event.get("status") or "completed")
        span.attributes[a.SUBAGENT_STATUS] = status
        usage = event.get("usage") or {}
        span.attributes[a.INPUT_TOKENS] = int(usage.get("input_tokens") or 0)
        span.attributes[a.OUTPUT_TOKENS] = int(usage.get("output_tokens") or 0)
        if isinstance(usage.get("cost_usd"), (int, float)):
            span.attributes[a.COST] = float(usage["cost_usd"])
        if event.get("stop_reason"):
            span.attributes[a.STOP_REASON] = str(event["stop_reason"])
        if self.capture_content and event.get("result"):
            span.attributes[a.OUTPUT_MESSAGES] = _messages("assistant", [str(event["result"])])
        error = None
        if status in SUBAGENT_ERRORS:
            error = str(event.get("result") or f"sub-agent {status}")
            span.attributes[a.ERROR_TYPE] = status
        else:  # an agent error it got past is no failure of the sub-agent
            span.error = None
            span.attributes.pop(a.ERROR_TYPE, None)
        self._end(span, unix_ns(record.timestamp), record.seq, error=error)

    # -- tool calls -----------------------------------------------------------------------

    def _tool_started(self, run: _Run, record: EventRecord, event: dict[str, Any], name: str) -> SpanData | None:
        key = (record.conversation_id, str(event.get("tool_call_id")))
        agent = run.agents.get(record.conversation_id)
        if key in run.tools or agent is None:
            return None  # a duplicate, or a stream with no open agent span (not part of a run)
        span = self._start(run, f"execute_tool {name}", record, parent=agent.span_id)
        if span is None:
            return None
        span.attributes.update({a.OPERATION: "execute_tool", a.TOOL_NAME: name, a.TOOL_CALL_ID: key[1], a.TOOL_TYPE: "function"})
        run.tools[key] = span
        run.calls[key] = span.span_id
        return span

    def _tool_ended(self, run: _Run, record: EventRecord, event: dict[str, Any], status: str, result: Any) -> None:
        span = run.tools.pop((record.conversation_id, str(event.get("tool_call_id"))), None)
        if span is None:
            return
        span.attributes[a.TOOL_STATUS] = status
        if self.capture_content and result:
            span.attributes[a.TOOL_RESULT] = clip(result if isinstance(result, str) else json.dumps(result, ensure_ascii=False))
        error = None
        if status in TOOL_ERRORS:
            span.attributes[a.ERROR_TYPE] = status
            error = f"tool call {status}"
            if isinstance(result, str) and result:
                error = f"{error}: {result[:200]}"
        self._end(span, unix_ns(record.timestamp), record.seq, error=error)

    def _peer_tool_call(self, run: _Run, record: EventRecord, event: dict[str, Any]) -> None:
        """A bridged peer's call: its first event opens the span (its title then is the tool's
        name, e.g. ``Terminal``, ``Task``), later ones update it, a terminal status ends it."""
        key = (record.conversation_id, str(event.get("tool_call_id")))
        span = run.tools.get(key)
        if span is None and key not in run.calls:
            span = self._tool_started(run, record, event, str(event.get("title") or event.get("tool_kind") or "tool"))
        if span is None:
            return
        if event.get("title"):
            span.attributes[a.TOOL_TITLE] = str(event["title"])
        if event.get("tool_kind"):
            span.attributes[a.TOOL_KIND] = str(event["tool_kind"])
        if self.capture_content and event.get("raw_input"):
            span.attributes[a.TOOL_ARGUMENTS] = clip(json.dumps(event["raw_input"], ensure_ascii=False))
        status = event.get("status")
        if status in TERMINAL_TOOL:
            self._tool_ended(run, record, event, str(status), event.get("raw_output"))

    def _message(self, run: _Run, record: EventRecord, event: dict[str, Any]) -> None:
        """Content capture: a sub-agent's prompt is its span's input; an answer, the output."""
        span = run.agents.get(record.conversation_id)
        if span is None:
            return
        role = "user" if event.get("role") == "user" else "assistant"
        key = a.INPUT_MESSAGES if role == "user" else a.OUTPUT_MESSAGES
        if role == "user" or record.conversation_id == record.root_id:
            span.attributes[key] = _messages(role, [str(event.get("content", ""))])

    # -- span bookkeeping -----------------------------------------------------------------

    def _start(self, run: _Run, name: str, record: EventRecord, *, parent: int | None) -> SpanData | None:
        if self._open >= self.max_open_spans:
            self.dropped += 1
            return None
        self._open += 1
        span = SpanData(
            name=name,
            trace_id=run.trace_id,
            span_id=span_id_of(record.id),
            parent_span_id=parent,
            start_ns=unix_ns(record.timestamp),
        )
        span.attributes[a.CONVERSATION_ID] = record.root_id
        span.attributes[a.SEQ_FIRST] = record.seq  # type: ignore[assignment]
        if record.subagent_id is not None:
            span.attributes[a.SUBAGENT_ID] = record.subagent_id
        if record.parent_tool_use_id is not None:
            span.attributes[a.PARENT_TOOL_USE_ID] = record.parent_tool_use_id
        return span

    def _end(self, span: SpanData, end_ns: int, seq: int | None, *, error: str | None = None) -> None:
        span.finish(end_ns, seq, error)
        self._open -= 1
        self._ended.append(span)


def _messages(role: str, texts: list[str]) -> str:
    """``gen_ai.input.messages`` / ``gen_ai.output.messages``: one message per text."""
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": clip(t)}]} for t in texts], ensure_ascii=False)
