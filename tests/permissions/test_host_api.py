"""``host.request_permission``, the API bridged backends ask through: a peer's options go out
as offered and the chosen ``option_id`` comes back; cancelling the asker resolves it
``cancelled`` with the reason; a remembered ``allow_always`` answers the peer's next request."""

from __future__ import annotations

import asyncio
from typing import Any

from taskwire.events import PermissionOption
from tests.api.helpers import all_events
from tests.permissions.helpers import answer, wait_pending
from tests.servers import RunningServer

PEER_OPTIONS = [
    PermissionOption(option_id="allow-once", kind="allow_once", name="Allow"),
    PermissionOption(option_id="allow-with-updates", kind="allow_always", name="Always Allow"),
    PermissionOption(option_id="reject", kind="reject_once", name="Reject"),
]


async def peer_subagent(server: RunningServer) -> tuple[str, Any, Any]:
    """A root and one sub-agent host, as a bridged backend maps a peer's sub-agent."""
    record = await server.runtime.create({"kind": "native"}, run=False)
    root = await server.runtime.host(record.id)
    child = await root.start_subagent("toolu_agent_1", subagent_type="general-purpose", description="peer sub-agent")
    return record.id, root, child


def ask(host: Any, call: str, **extra: Any) -> asyncio.Task[Any]:
    return asyncio.create_task(host.request_permission(
        tool_call_id=call, tool_name="Bash", title="python3 -c 'print(1)'",
        arguments={"command": "python3 -c 'print(1)'"}, options=PEER_OPTIONS, reason="Claude Code asks", **extra,
    ))


async def test_a_peers_options_go_out_as_offered_and_the_chosen_id_comes_back(server: RunningServer) -> None:
    cid, root, child = await peer_subagent(server)
    asking = ask(child, "toolu_bash_1")
    [request] = await wait_pending(server, cid, 1)
    assert request["subagent_id"] == child.conversation_id and request["parent_tool_use_id"] == "toolu_agent_1"
    assert [o["option_id"] for o in request["options"]] == ["allow-once", "allow-with-updates", "reject"]
    assert request["reason"] == "Claude Code asks"
    response = await answer(server, cid, request["request_id"], option_id="allow-with-updates")
    assert response.status_code == 200
    resolution = await asyncio.wait_for(asking, 30)
    assert resolution.allowed and resolution.option_id == "allow-with-updates" and resolution.answered_by == "rest"

    # The person said always: the peer's next request for Bash in this tree is answered at once,
    # with the peer's own allow_always option, and the root's own request too.
    again = await asyncio.wait_for(ask(child, "toolu_bash_2"), 30)
    assert again.answered_by == "policy" and again.option_id == "allow-with-updates"
    own = await asyncio.wait_for(ask(root, "toolu_bash_3"), 30)
    assert own.answered_by == "policy" and own.event.subagent_id is None
    stream = await all_events(server, cid, subagent_id=child.conversation_id)
    assert [e["kind"] for e in stream if e["kind"].startswith("Permission")] == [
        "PermissionRequestEvent", "PermissionResolvedEvent", "PermissionRequestEvent", "PermissionResolvedEvent",
    ]


async def test_cancelling_the_asker_resolves_it_cancelled_with_the_reason(server: RunningServer) -> None:
    cid, _, child = await peer_subagent(server)
    asking = ask(child, "toolu_bash_1")
    [request] = await wait_pending(server, cid, 1)
    asking.cancel("the peer withdrew its request")
    await asyncio.gather(asking, return_exceptions=True)
    assert asking.cancelled()
    assert await wait_pending(server, cid, 0) == []
    [entry] = (await server.client.get(f"/api/conversations/{cid}/permissions", params={"status": "all"})).json()
    assert entry["status"] == "cancelled" and entry["resolution"]["reason"] == "the peer withdrew its request"
    assert entry["resolution"]["answered_by"] == "server" and "option_id" not in entry["resolution"]
    late = await answer(server, cid, request["request_id"], option_id="allow-once")
    assert late.status_code == 409
