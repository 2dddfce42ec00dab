"""Projections that do not map permissions yet stay valid around them: the ACP agent side
sends nothing for the new kinds and the call goes on as before."""

from __future__ import annotations

from server.acp.projection import ACPProjection
from server.events import (
    ActionEvent,
    ConversationStateUpdateEvent,
    ObservationEvent,
    PermissionRequestEvent,
    PermissionResolvedEvent,
)
from server.permissions.requests import NATIVE_OPTIONS


def wire(event, seq: int) -> dict:  # type: ignore[no-untyped-def]
    event.seq = seq
    return event.model_dump(mode="json", exclude_none=True)


def test_the_acp_projection_passes_over_permission_events() -> None:
    projection = ACPProjection()
    events = [
        ActionEvent(tool_name="terminal", tool_call_id="c1", arguments={"command": "echo hi"}),
        PermissionRequestEvent(request_id="r1", tool_call_id="c1", tool_name="terminal", options=list(NATIVE_OPTIONS)),
        ConversationStateUpdateEvent(key="pending_permissions", value=[{"request_id": "r1", "tool_name": "terminal"}]),
        PermissionResolvedEvent(request_id="r1", tool_call_id="c1", outcome="allowed", option_id="allow_once"),
        ConversationStateUpdateEvent(key="pending_permissions", value=[]),
        ObservationEvent(tool_name="terminal", tool_call_id="c1", content="hi", status="completed"),
    ]
    outputs = [projection.receive(wire(event, n)) for n, event in enumerate(events, 1)]
    assert outputs[1:5] == [[], [], [], []]
    assert outputs[0] and outputs[5]
    assert projection.open_calls == []
