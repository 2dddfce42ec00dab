"""The public contract, pinned: event kinds and fields, tool names and arguments, settings.

These never change once shipped. A failure here means a breaking change: make it on purpose,
in DESIGN.md first.
"""

from __future__ import annotations

import uuid

from taskwire.events import EVENT_KINDS
from taskwire.runtime.tools import BUILTIN_TOOLS
from taskwire.settings import Settings

BASE_FIELDS = {"id", "kind", "timestamp", "source", "seq", "parent_tool_use_id", "subagent_id"}

EVENT_FIELDS = {
    "MessageEvent": {"role", "content"},
    "ActionEvent": {"tool_name", "tool_call_id", "arguments", "thought", "llm_response_id"},
    "ObservationEvent": {"tool_name", "tool_call_id", "content", "is_error", "status"},
    "AgentErrorEvent": {"error", "code", "tool_call_id"},
    "StreamingDeltaEvent": {"content", "channel"},
    "ConversationStateUpdateEvent": {"key", "value", "reason"},
    "SubagentStartedEvent": {"subagent_type", "description", "parent_subagent_id", "label", "cwd"},
    "SubagentFinishedEvent": {"status", "result", "usage", "stop_reason", "budget"},
    "ACPToolCallEvent": {"tool_call_id", "title", "status", "tool_kind", "raw_input", "raw_output", "content", "is_error"},
    "PermissionRequestEvent": {"request_id", "tool_call_id", "tool_name", "title", "arguments", "options", "reason"},
    "PermissionResolvedEvent": {"request_id", "tool_call_id", "outcome", "option_id", "reason", "answered_by"},
    "LLMRetryEvent": {"attempt", "max_attempts", "delay", "reason", "error", "status_code", "discard_text"},
}

PERMISSION_OPTION_FIELDS = {"option_id", "kind", "name"}
PERMISSION_OPTION_KINDS = {"allow_once", "allow_always", "reject_once", "reject_always"}
PERMISSION_OUTCOMES = {"allowed", "rejected", "cancelled", "timed_out"}

TOOL_ARGUMENTS = {
    "terminal": {"command", "timeout"},
    "file_editor": {"command", "path", "file_text", "old_str", "new_str", "insert_line", "view_range"},
    "task": {"description", "prompt", "subagent_type"},
    "think": {"thought"},
    "finish": {"message"},
}

SETTINGS = {
    "OH_HOST", "OH_PORT", "OH_SESSION_API_KEYS", "OH_WORKSPACE_PATH", "OH_WORKSPACE_ROOTS", "OH_DATABASE_URL", "OH_REDIS_URL",
    "OH_FORWARD_SUBAGENT_EVENTS", "OH_PLUGIN_DIRS", "OH_WEBHOOKS", "OH_WS_QUEUE_SIZE", "OH_MAX_SUBSCRIBERS",
    "OH_MAX_PARALLEL_SUBAGENTS", "OH_MAX_SUBAGENT_DEPTH", "OH_MAX_BODY_BYTES", "OH_IDLE_UNLOAD_SECONDS", "OH_REPLICA_ID",
    "OH_LEASE_SECONDS", "OH_STORE_TIMEOUT", "OH_RESUME_AFTER_STORE_FAULT", "OH_TRACING", "OH_LOG_FORMAT", "OH_LOG_LEVEL",
    "OH_WS_AUTH_TIMEOUT", "OH_MAX_UNAUTHENTICATED_SOCKETS", "OH_WS_SEND_TIMEOUT", "OH_TOOL_ENV_ALLOW",
    "OH_APPROVAL", "OH_APPROVAL_TIMEOUT_S",
    "OH_LLM_API", "OH_LLM_MODEL", "OH_LLM_BASE_URL", "OH_LLM_API_KEY", "OH_LLM_SCRIPT", "OH_LLM_TIMEOUT", "OH_OPENHANDS_PYTHON",
    "OH_LLM_STALL_TIMEOUT", "OH_LLM_MAX_RETRIES", "OH_LLM_RETRY_MAX_SECONDS", "OH_LLM_MAX_CONCURRENCY",
    "OH_CONFIG_FILE",
}


def test_event_kinds_and_fields_are_pinned() -> None:
    assert set(EVENT_KINDS) == set(EVENT_FIELDS)
    for kind, cls in EVENT_KINDS.items():
        assert set(cls.model_fields) == BASE_FIELDS | EVENT_FIELDS[kind], kind
        assert cls(**_required(kind)).kind == kind


def test_permission_options_and_outcomes_are_pinned() -> None:
    from typing import get_args

    from taskwire_client.events import PermissionOption, PermissionOptionKind, PermissionOutcome

    assert set(PermissionOption.model_fields) == PERMISSION_OPTION_FIELDS
    assert set(get_args(PermissionOptionKind)) == PERMISSION_OPTION_KINDS
    assert set(get_args(PermissionOutcome)) == PERMISSION_OUTCOMES
    assert Settings.model_fields["approval"].default == "never"
    assert Settings.model_fields["approval_timeout_s"].default is None


def test_only_streaming_deltas_are_ephemeral() -> None:
    assert {k for k, cls in EVENT_KINDS.items() if cls.ephemeral} == {"StreamingDeltaEvent"}


def test_wire_form_omits_none_and_uses_utc_z() -> None:
    event = EVENT_KINDS["MessageEvent"](content="hi")
    wire = event.to_json()
    assert '"seq"' not in wire and '"parent_tool_use_id"' not in wire and '"subagent_id"' not in wire
    assert event.model_dump(mode="json")["timestamp"].endswith("Z")


def test_event_ids_are_time_ordered_uuid_strings() -> None:
    # DESIGN.md says uuid4; taskwire deliberately makes them UUIDv7 (server/events/ids.py):
    # still UUID strings to every client, and appends to the id index instead of writing a
    # random page of it per event.
    events = [EVENT_KINDS["MessageEvent"](content=str(n)) for n in range(2000)]
    ids = [uuid.UUID(event.id) for event in events]
    assert all(str(u) == event.id for u, event in zip(ids, events))
    assert {(u.version, u.variant) for u in ids} == {(7, uuid.RFC_4122)}
    assert len(set(ids)) == len(ids)
    millis = [u.int >> 80 for u in ids]
    assert millis == sorted(millis)
    assert abs(millis[0] / 1000 - events[0].timestamp.timestamp()) < 1


def test_tool_names_and_arguments_are_pinned() -> None:
    assert set(BUILTIN_TOOLS) == set(TOOL_ARGUMENTS)
    for name, tool in BUILTIN_TOOLS.items():
        assert set(tool.Arguments.model_fields) == TOOL_ARGUMENTS[name], name
    assert BUILTIN_TOOLS["task"].Arguments.model_fields["subagent_type"].default == "general-purpose"


def test_settings_are_pinned() -> None:
    names = {f"OH_{name.upper()}" for name in Settings.model_fields}
    assert names == SETTINGS
    assert Settings.model_fields["forward_subagent_events"].default is False


def _required(kind: str) -> dict[str, object]:
    return {
        "ActionEvent": {"tool_name": "t", "tool_call_id": "c"},
        "ObservationEvent": {"tool_name": "t", "tool_call_id": "c"},
        "AgentErrorEvent": {"error": "e"},
        "ConversationStateUpdateEvent": {"key": "status"},
        "ACPToolCallEvent": {"tool_call_id": "c"},
        "PermissionRequestEvent": {"request_id": "r", "tool_call_id": "c", "tool_name": "t"},
        "PermissionResolvedEvent": {"request_id": "r", "tool_call_id": "c", "outcome": "allowed"},
        "LLMRetryEvent": {"attempt": 2, "max_attempts": 7, "delay": 1.0, "reason": "429", "error": "e"},
    }.get(kind, {})
