"""The ACP projection (agent side) and permission events, without I/O: a request the root's
``pending_permissions`` names becomes an ``Ask`` stamped like its call, its call waits
``pending``, and leaving the set settles it. The AG-UI side is ``tests/agui/test_interrupts.py``."""

from __future__ import annotations

from taskwire.acp.projection import ACPProjection
from taskwire.acp.updates import Ask, Settled, Update
from taskwire.events import (
    ActionEvent,
    ConversationStateUpdateEvent,
    ObservationEvent,
    PermissionRequestEvent,
    PermissionResolvedEvent,
)
from taskwire.permissions.requests import NATIVE_OPTIONS

STAMP = {"parent_tool_use_id": "task-call", "subagent_id": "sub-1"}
PENDING = [{"request_id": "r1", "tool_call_id": "c1", "tool_name": "terminal", "title": "echo hi", **STAMP}]


def wire(event, seq: int) -> dict:  # type: ignore[no-untyped-def]
    event.seq = seq
    return event.model_dump(mode="json", exclude_none=True)


def test_a_subagents_request_is_asked_once_stamped_and_settled_when_it_leaves_the_pending_set() -> None:
    projection = ACPProjection()
    events = [
        ActionEvent(tool_name="terminal", tool_call_id="c1", arguments={"command": "echo hi"}, **STAMP),
        PermissionRequestEvent(request_id="r1", tool_call_id="c1", tool_name="terminal", title="echo hi",
                               arguments={"command": "echo hi"}, options=list(NATIVE_OPTIONS), **STAMP),
        ConversationStateUpdateEvent(key="pending_permissions", value=PENDING),
        PermissionResolvedEvent(request_id="r1", tool_call_id="c1", outcome="allowed", option_id="allow_once", **STAMP),
        ConversationStateUpdateEvent(key="pending_permissions", value=[]),
        ObservationEvent(tool_name="terminal", tool_call_id="c1", content="hi", status="completed", **STAMP),
    ]
    out = [projection.receive(wire(event, n)) for n, event in enumerate(events, 1)]
    assert [u.payload["status"] for u in out[1]] == ["pending"]  # type: ignore[union-attr]
    [ask] = out[2]
    assert isinstance(ask, Ask) and not ask.needs_details
    assert ask.tool_call["toolCallId"] == "c1" and ask.tool_call["status"] == "pending"
    assert ask.tool_call["_meta"] == {"claudeCode": {"parentToolUseId": "task-call"},
                                      "taskwire": {"subagentId": "sub-1", "requestId": "r1", "toolName": "terminal"}}
    assert [(o["optionId"], o["kind"]) for o in ask.options] == [(o.option_id, o.kind) for o in NATIVE_OPTIONS]
    assert [u.payload["status"] for u in out[3]] == ["in_progress"]  # type: ignore[union-attr]
    assert out[4] == [Settled("r1")]
    assert isinstance(out[5][0], Update) and projection.open_calls == []


def test_without_the_request_event_the_ask_needs_its_details() -> None:
    projection = ACPProjection()  # forwarding off: only the root's own stream
    [ask] = projection.receive(wire(ConversationStateUpdateEvent(key="pending_permissions", value=PENDING), 1))
    assert isinstance(ask, Ask) and ask.needs_details and ask.options == []
    assert ask.tool_call["_meta"]["claudeCode"] == {"parentToolUseId": "task-call"}
    # The same set again asks nothing more; a request that joins it does.
    again = projection.receive(wire(ConversationStateUpdateEvent(key="pending_permissions", value=PENDING), 2))
    assert again == []
