"""The ``chat`` spans of ``SpanBuilder``: one per model request taskwire made itself, built
from the ``usage`` update after it, with a ``gen_ai.retry`` event for each ``LLMRetryEvent``
the request took before it was answered."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..events import EventRecord
from . import spans as a
from .spans import SpanData, SpanEvent, clip, unix_ns

if TYPE_CHECKING:
    from .chat_history import ChatHistory
    from .run_spans import RunSpans as _Run

RETRY_EVENT = "gen_ai.retry"
"""The name of a chat span's event for each retry (attributes ``taskwire.retry.*``)."""


class ChatSpans:
    """The model-call half of ``SpanBuilder`` (which provides ``_start``, ``_end``,
    ``_history`` and ``capture_content``)."""

    capture_content: bool
    _history: ChatHistory | None

    if TYPE_CHECKING:
        def _start(self, run: _Run, name: str, record: EventRecord, *, parent: int | None) -> SpanData | None: ...
        def _end(self, span: SpanData, end_ns: int, seq: int | None, *, error: str | None = None) -> None: ...

    def _llm_retry(self, run: _Run, record: EventRecord, event: dict[str, Any]) -> None:
        attributes = {f"taskwire.retry.{key}": event[key] for key in ("attempt", "max_attempts", "delay", "reason", "status_code")
                      if event.get(key) is not None}
        attributes[a.ERROR_TYPE] = str(event.get("reason") or "error")
        attributes["taskwire.retry.error"] = clip(str(event.get("error") or ""))
        run.retries.setdefault(record.conversation_id, []).append(SpanEvent(RETRY_EVENT, unix_ns(record.timestamp), attributes))

    # -- model calls ----------------------------------------------------------------------

    def _usage(self, run: _Run, record: EventRecord, value: Any) -> None:
        added = value.get("added") if isinstance(value, dict) else None
        agent = run.agents.get(record.conversation_id)
        if not isinstance(added, dict) or not added.get("started_at") or agent is None:
            return  # a peer's turn total, not one request of ours
        model = added.get("model")
        span = self._start(run, f"chat {model}" if model else "chat", record, parent=agent.span_id)
        if span is None:
            return
        span.kind = "client"
        span.events = run.retries.pop(record.conversation_id, [])
        span.start_ns = min(unix_ns(str(added["started_at"])), unix_ns(record.timestamp))
        span.attributes.update({
            a.OPERATION: "chat",
            a.INPUT_TOKENS: int(added.get("input_tokens") or 0),
            a.OUTPUT_TOKENS: int(added.get("output_tokens") or 0),
            a.CACHE_READ_TOKENS: int(added.get("cache_read_tokens") or 0),
            a.CACHE_WRITE_TOKENS: int(added.get("cache_write_tokens") or 0),
        })
        if isinstance(added.get("cost_usd"), (int, float)):
            span.attributes[a.COST] = float(added["cost_usd"])
            span.attributes[a.COST_SOURCE] = str(added.get("cost_source") or "")
        if model:
            span.attributes[a.REQUEST_MODEL] = str(model)
        if added.get("response_id"):
            span.attributes[a.RESPONSE_ID] = str(added["response_id"])
        if added.get("finish_reason"):
            span.attributes[a.FINISH_REASONS] = [str(added["finish_reason"])]
        inputs = self._history.input_messages(record.conversation_id) if self._history is not None else None
        if inputs is not None:
            span.attributes[a.INPUT_MESSAGES], partial = inputs
            if partial:
                span.attributes[a.INPUT_PARTIAL] = True
            system = self._history.system_instructions(record.conversation_id, added.get("system_instructions"))  # type: ignore[union-attr]
            if system is not None:
                span.attributes[a.SYSTEM_INSTRUCTIONS] = system
        if self.capture_content:
            span.finish(unix_ns(record.timestamp), record.seq)
            run.chats[record.conversation_id] = (span, [])  # its text and calls come next
        else:
            self._end(span, unix_ns(record.timestamp), record.seq)

    def _settle_chat(self, run: _Run, record: EventRecord, event: dict[str, Any]) -> None:
        """Content capture: the records after a ``chat`` span's usage update that hold its
        response (the calls it made, or its answer) become its output; anything else ends it."""
        span, parts = run.chats[record.conversation_id]
        if record.kind == "ActionEvent" and event.get("llm_response_id") == span.attributes.get(a.RESPONSE_ID):
            if event.get("thought"):
                parts.append({"type": "text", "content": clip(str(event["thought"]))})
            parts.append({
                "type": "tool_call", "id": event.get("tool_call_id"), "name": event.get("tool_name"),
                "arguments": event.get("arguments") or {},
            })
            return
        if record.kind == "MessageEvent" and event.get("role") == "assistant" and not parts:
            parts.append({"type": "text", "content": clip(str(event.get("content", "")))})
        self._end_chat(run, record.conversation_id)

    def _end_chat(self, run: _Run, conversation_id: str) -> None:
        span, parts = run.chats.pop(conversation_id)
        if parts:
            message: dict[str, Any] = {"role": "assistant", "parts": parts}
            reasons = span.attributes.get(a.FINISH_REASONS)
            if isinstance(reasons, list) and reasons:
                message["finish_reason"] = reasons[0]
            span.attributes[a.OUTPUT_MESSAGES] = json.dumps([message], ensure_ascii=False)
        self._end(span, span.end_ns or span.start_ns, None)

