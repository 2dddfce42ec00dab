"""The client library and permissions: ``Tree`` marks a waiting call ``pending`` and keeps the
tree's waiting set; ``Client.permissions`` / ``answer_permission`` list and answer."""

from __future__ import annotations

import pytest

from taskwire_client import APIError, Client, Tree
from taskwire.events import (
    ActionEvent,
    ConversationStateUpdateEvent,
    ObservationEvent,
    PermissionRequestEvent,
    PermissionResolvedEvent,
    SubagentStartedEvent,
)
from taskwire.permissions.requests import NATIVE_OPTIONS
from tests.api.helpers import create, scripted_agent
from tests.permissions.helpers import one_asker_script, wait_pending
from tests.servers import RunningServer, wait_for_status


def sub(event, seq: int):  # type: ignore[no-untyped-def]
    event.seq, event.subagent_id, event.parent_tool_use_id = seq, "s1", "call_task"
    return event


def test_a_waiting_call_is_pending_until_its_answer_and_the_tree_knows_who_waits() -> None:
    tree = Tree("root")
    entry = {"request_id": "r1", "subagent_id": "s1", "parent_tool_use_id": "call_task", "tool_call_id": "c1",
             "tool_name": "terminal", "title": "echo hi"}
    tree.apply(ConversationStateUpdateEvent(key="full_state", value={"status": "running", "subagents": []}))
    assert tree.pending_permissions == []
    tree.apply(ActionEvent(tool_name="task", tool_call_id="call_task", arguments={"description": "Ask"}, seq=1))
    tree.apply(sub(SubagentStartedEvent(description="Ask", label="task-1"), 2))
    tree.apply(sub(ActionEvent(tool_name="terminal", tool_call_id="c1", arguments={"command": "echo hi"}), 3))
    tree.apply(sub(PermissionRequestEvent(request_id="r1", tool_call_id="c1", tool_name="terminal",
                                          title="echo hi", options=list(NATIVE_OPTIONS)), 4))
    tree.apply(ConversationStateUpdateEvent(key="pending_permissions", value=[entry], seq=5))
    call = tree.call("c1")
    assert call is not None and call.status == "pending" and call.request is not None
    assert tree.pending_permissions == [entry]
    assert "terminal echo hi: pending (waiting for permission)" in tree.outline()[-1]
    tree.apply(sub(PermissionResolvedEvent(request_id="r1", tool_call_id="c1", outcome="allowed", option_id="allow_once"), 6))
    tree.apply(ConversationStateUpdateEvent(key="pending_permissions", value=[], seq=7))
    assert call.status == "in_progress" and call.request is None and call.resolution is not None
    assert tree.pending_permissions == []
    tree.apply(sub(ObservationEvent(tool_name="terminal", tool_call_id="c1", content="hi", status="completed"), 8))
    assert call.status == "completed"


async def test_the_client_lists_and_answers_requests(server: RunningServer) -> None:
    info = await create(server, agent=scripted_agent(one_asker_script(), approval="always"), initial_message="Go.")
    await wait_pending(server, info["id"], 1)
    async with Client(server.url) as client:
        [request] = await client.permissions(info["id"])
        resolved = await client.answer_permission(info["id"], request["request_id"], decision="reject", reason="no")
        assert isinstance(resolved, PermissionResolvedEvent) and resolved.outcome == "rejected"
        with pytest.raises(APIError) as late:
            await client.answer_permission(info["id"], request["request_id"], option_id="allow_once")
        assert late.value.status == 409 and late.value.code == "permission_resolved"
        await wait_for_status(server.client, info["id"], {"finished"})
        [entry] = await client.permissions(info["id"], status="all")
        assert entry["resolution"]["reason"] == "no"
