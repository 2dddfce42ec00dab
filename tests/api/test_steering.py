"""Steering one sub-agent: ``POST .../subagents/{id}/messages`` reaches that sub-agent's next
model request and no other, is stored in its own stream, and is refused clearly when it cannot
be delivered (ended, missing, a peer's sub-agent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.acp.helpers import fake_agent, wait_for_event
from tests.acp.test_backend import start, subagents
from tests.api.helpers import all_events
from tests.api.socket_client import next_frame, open_socket
from tests.api.steering import SUB_PROMPT, gated_script, gated_tree, subagent_waiting, user_texts
from tests.servers import isolated_settings, taskwire_server, wait_for_status

STEER = "Use the second approach instead."


def steer_url(conversation_id: str, subagent_id: str) -> str:
    return f"/api/conversations/{conversation_id}/subagents/{subagent_id}/messages"


@pytest.mark.parametrize("forwarding", [False, True])
async def test_a_message_reaches_the_subagents_next_model_request_and_no_parent_request(
    tmp_path: Path, forwarding: bool
) -> None:
    async with gated_tree(tmp_path, gated_script(tmp_path / "gate"), forward_subagent_events=forwarding) as tree:
        server = tree.server
        cid = await tree.start()
        sid = await subagent_waiting(server, cid)
        async with open_socket(server, cid, resend_mode="all") as ws:
            response = await server.client.post(steer_url(cid, sid), json={"content": STEER})
            assert response.status_code == 202, response.text
            stored = response.json()
            assert stored["kind"] == "MessageEvent" and stored["source"] == "user" and stored["content"] == STEER
            assert stored["subagent_id"] == sid and stored["seq"] > 0
            tree.open_gate()
            assert (await wait_for_status(server.client, cid, {"finished", "error"}))["status"] == "finished"
            if forwarding:  # live on the root's socket, stamped like the sub-agent's other events
                while True:
                    frame = await next_frame(ws)
                    if frame.get("content") == STEER:
                        break
                assert frame["subagent_id"] == sid and frame["parent_tool_use_id"] and frame["seq"] == stored["seq"]

        sub_requests = [b for b in tree.requests() if user_texts(b)[:1] == [SUB_PROMPT]]
        main_requests = [b for b in tree.requests() if user_texts(b)[:1] == ["Main work."]]
        assert len(sub_requests) == 2 and len(main_requests) == 2
        assert STEER not in user_texts(sub_requests[0])
        assert sub_requests[1]["messages"][-1] == {"role": "user", "content": STEER}  # after its tool result
        assert all(STEER not in json.dumps(body) for body in main_requests)

        # The sub-agent's own stream holds it where it arrived: during the terminal call, before
        # the model call that read it.
        own = [(e["kind"], e.get("tool_name") or e.get("content") or e.get("key")) for e in await all_events(server, sid)]
        steered = own.index(("MessageEvent", STEER))
        assert own.index(("ActionEvent", "terminal")) < steered < own.index(("ObservationEvent", "terminal"))
        assert [k for k in own[:steered] if k == ("ConversationStateUpdateEvent", "usage")] == [("ConversationStateUpdateEvent", "usage")]
        parent = await all_events(server, cid)
        assert all(STEER not in json.dumps(e) for e in parent)

        # Ended now: 409, and the reason says so.
        again = await server.client.post(steer_url(cid, sid), json={"content": "still there?"})
        assert again.status_code == 409 and again.json()["code"] == "subagent_not_running"


async def test_steering_a_missing_subagent_or_with_a_bad_body_is_refused(tmp_path: Path) -> None:
    async with gated_tree(tmp_path, gated_script(tmp_path / "gate")) as tree:
        server = tree.server
        cid = await tree.start()
        sid = await subagent_waiting(server, cid)
        missing = await server.client.post(steer_url(cid, "no-such-subagent"), json={"content": "hi"})
        assert missing.status_code == 404 and missing.json()["code"] == "subagent_not_found"
        unknown_tree = await server.client.post(steer_url("no-such-conversation", sid), json={"content": "hi"})
        assert unknown_tree.status_code == 404
        for body in ({}, {"content": ""}, {"content": 5}, {"content": "hi", "run": True}):
            bad = await server.client.post(steer_url(cid, sid), json=body)
            assert bad.status_code == 422, body
        tree.open_gate()
        assert (await wait_for_status(server.client, cid, {"finished", "error"}))["status"] == "finished"
        assert all("hi" != e.get("content") for e in await all_events(server, sid))


async def test_a_message_then_a_cancel_stops_that_subagent_alone(tmp_path: Path) -> None:
    """Steered, then cancelled before its next model call: the message stays in its stream and
    reaches no model; the parent reads that it was cancelled and finishes."""
    async with gated_tree(tmp_path, gated_script(tmp_path / "gate")) as tree:
        server = tree.server
        cid = await tree.start()
        sid = await subagent_waiting(server, cid)
        assert (await server.client.post(steer_url(cid, sid), json={"content": STEER})).status_code == 202
        assert (await server.client.post(f"/api/conversations/{cid}/subagents/{sid}/cancel")).status_code == 202
        assert (await wait_for_status(server.client, cid, {"finished", "error"}))["status"] == "finished"
        entry = (await server.client.get(f"/api/conversations/{cid}/subagents")).json()[0]
        assert entry["status"] == "cancelled"
        assert any(e.get("content") == STEER for e in await all_events(server, sid))
        assert all(STEER not in json.dumps(body) for body in tree.requests())


async def test_an_interrupt_after_a_message_pauses_the_tree_and_the_message_stays_stored(tmp_path: Path) -> None:
    async with gated_tree(tmp_path, gated_script(tmp_path / "gate")) as tree:
        server = tree.server
        cid = await tree.start()
        sid = await subagent_waiting(server, cid)
        assert (await server.client.post(steer_url(cid, sid), json={"content": STEER})).status_code == 202
        assert (await server.client.post(f"/api/conversations/{cid}/interrupt")).status_code == 200
        assert (await wait_for_status(server.client, cid, {"paused"}))["status"] == "paused"
        assert any(e.get("content") == STEER for e in await all_events(server, sid))
        late = await server.client.post(steer_url(cid, sid), json={"content": "and now?"})
        assert late.status_code == 409 and late.json()["code"] == "subagent_not_running"


async def test_a_peer_agents_own_subagent_is_not_steerable(tmp_path: Path) -> None:
    """Over ACP, the agent runs its sub-agents inside its own turn and takes no message for one:
    409 ``subagent_not_steerable``, saying why; nothing is stored, the sub-agent goes on."""
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        cid = await start(server, fake_agent(tmp_path), "hang")
        await wait_for_event(server, cid, lambda e: e.get("tool_call_id") == "sub-h-2")
        sid = (await subagents(server, cid))["agent-h"]["subagent_id"]
        response = await server.client.post(steer_url(cid, sid), json={"content": STEER})
        assert response.status_code == 409, response.text
        assert response.json()["code"] == "subagent_not_steerable"
        assert "offers no way to send it a message" in response.json()["detail"]
        assert all(e.get("content") != STEER for e in await all_events(server, sid))
        assert (await subagents(server, cid))["agent-h"]["status"] == "running"
        assert (await server.client.post(f"/api/conversations/{cid}/interrupt")).status_code == 200
        assert (await wait_for_status(server.client, cid, {"paused"}))["status"] == "paused"


async def test_two_messages_in_a_row_both_reach_the_next_request_in_order(tmp_path: Path) -> None:
    async with gated_tree(tmp_path, gated_script(tmp_path / "gate")) as tree:
        server = tree.server
        cid = await tree.start()
        sid = await subagent_waiting(server, cid)
        assert (await server.client.post(steer_url(cid, sid), json={"content": "one"})).status_code == 202
        assert (await server.client.post(steer_url(cid, sid), json={"content": "two"})).status_code == 202
        tree.open_gate()
        assert (await wait_for_status(server.client, cid, {"finished", "error"}))["status"] == "finished"
        sub_requests = [b for b in tree.requests() if user_texts(b)[:1] == [SUB_PROMPT]]
        assert user_texts(sub_requests[1])[1:] == ["one", "two"]
