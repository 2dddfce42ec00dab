"""``SpanData``: one span as the span builder makes it, before any SDK sees it.

Names follow the OpenTelemetry GenAI semantic conventions (``invoke_agent``, ``chat``,
``execute_tool``); ``taskwire.*`` attributes lead from a span back to the stored events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Literal, Union

AttributeValue = Union[str, int, float, bool, list[str]]

OPERATION = "gen_ai.operation.name"
CONVERSATION_ID = "gen_ai.conversation.id"
AGENT_ID = "gen_ai.agent.id"
AGENT_NAME = "gen_ai.agent.name"
AGENT_DESCRIPTION = "gen_ai.agent.description"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_ID = "gen_ai.response.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
CACHE_WRITE_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
COST = "gen_ai.usage.cost"
"""US dollars (no GenAI semantic convention names a cost yet; this is the name tools read)."""
COST_SOURCE = "taskwire.cost_source"
INPUT_MESSAGES = "gen_ai.input.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"

SUBAGENT_ID = "taskwire.subagent_id"
PARENT_TOOL_USE_ID = "taskwire.parent_tool_use_id"
PARENT_SUBAGENT_ID = "taskwire.parent_subagent_id"
SEQ_FIRST = "taskwire.seq.first"
SEQ_LAST = "taskwire.seq.last"
RUN_STATUS = "taskwire.run.status"
SUBAGENT_STATUS = "taskwire.subagent.status"
STOP_REASON = "taskwire.subagent.stop_reason"
"""The budget that stopped the sub-agent (``max_tokens`` ...), when one did."""
TOOL_STATUS = "taskwire.tool_call.status"
TOOL_TITLE = "taskwire.tool_call.title"
TOOL_KIND = "taskwire.tool_call.kind"
UNFINISHED = "taskwire.unfinished"
INPUT_PARTIAL = "taskwire.input.partial"

MAX_CONTENT_CHARS = 16_384
"""Captured text (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``) is cut to this."""


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """Something that happened during a span (a retry of a ``chat`` span's request)."""

    name: str
    time_ns: int
    attributes: dict[str, AttributeValue]


@dataclass(slots=True)
class SpanData:
    """A span: ids, parent, times in Unix nanoseconds, attributes and status."""

    name: str
    trace_id: int
    span_id: int
    parent_span_id: int | None
    start_ns: int
    kind: Literal["internal", "client"] = "internal"
    end_ns: int | None = None
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    error: str | None = None
    """Set when the operation failed: the span's status is ERROR with this description."""
    events: list[SpanEvent] = field(default_factory=list)

    def finish(self, end_ns: int, seq: int | None = None, error: str | None = None) -> None:
        self.end_ns = max(end_ns, self.start_ns)
        if seq is not None:
            self.attributes[SEQ_LAST] = seq
        if error is not None:
            self.error = error


def unix_ns(timestamp: str) -> int:
    """An event's ``timestamp`` (ISO 8601, ``Z``) in Unix nanoseconds."""
    moment = datetime.fromisoformat(timestamp)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def clip(text: str) -> str:
    """Captured content, cut to ``MAX_CONTENT_CHARS``."""
    return text if len(text) <= MAX_CONTENT_CHARS else text[:MAX_CONTENT_CHARS] + "…"


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
