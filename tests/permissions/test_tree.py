"""Native agents, the whole tree: two parallel sub-agents and one at depth 2 ask at once; the
answers come out of order from two clients (REST and a socket frame, one rejected with a
reason) and each reaches its own sub-agent, as the scripted model's next requests show."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from taskwire.llm.mock_server import create_mock_app
from tests.api.helpers import all_events, create
from tests.permissions.helpers import answer, pending_sets, reading, three_askers_script, wait_pending
from tests.servers import isolated_settings, serve_app, taskwire_server, wait_for_status


def model_requests(log: Path, lane: str, turn: int) -> list[dict[str, Any]]:
    """The bodies the scripted model received for ``lane``'s ``turn``."""
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    return [json.loads(entry["body"]) for entry in lines if entry["lane"] == lane and entry["turn"] == turn]


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    """The tool results an OpenAI-dialect request holds, by tool call id."""
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


@pytest.mark.parametrize("forwarding", [True, False], ids=["forwarding-on", "forwarding-off"])
async def test_three_requests_at_once_each_answer_reaches_its_own_subagent(tmp_path: Path, forwarding: bool) -> None:
    log = tmp_path / "model.jsonl"
    settings = isolated_settings(tmp_path, forward_subagent_events=forwarding)
    async with serve_app(create_mock_app(three_askers_script(), log_path=log)) as mock_url, taskwire_server(settings) as server:
        agent = {"kind": "native", "approval": "always",
                 "llm": {"api": "openai", "model": "mock", "base_url": f"{mock_url}/v1", "api_key": "k"}}
        info = await create(server, agent=agent)
        cid = info["id"]
        async with reading(server, cid) as root, httpx.AsyncClient(base_url=server.url, timeout=30) as other:
            await server.client.post(f"/api/conversations/{cid}/events", json={"content": "Go."})
            waiting = await wait_pending(server, cid, 3)
            assert (await server.client.get(f"/api/conversations/{cid}")).json()["status"] == "running"
            tree = {s["description"]: s for s in (await server.client.get(f"/api/conversations/{cid}/subagents")).json()}
            by_sub = {w["subagent_id"]: w for w in waiting}
            asks = {name: by_sub[tree[f"Work {name}"]["subagent_id"]] for name in "ABC"}
            # Each request names the call that waits, filed under the sub-agent that asks,
            # stamped with the task call that spawned it (C's by B's own task call).
            for name, request in asks.items():
                sub = tree[f"Work {name}"]
                assert request["tool_name"] == "terminal" and request["title"] == f"echo from-{name.lower()}"
                assert request["parent_tool_use_id"] == sub["parent_tool_use_id"]
                assert [o["kind"] for o in request["options"]] == ["allow_once", "allow_always", "reject_once"]
            assert tree["Work C"]["parent_subagent_id"] == tree["Work B"]["subagent_id"]
            # The tree's waiting set is root-level state, in the root's own stream.
            state = await root.wait_for(lambda f: f.get("key") == "pending_permissions" and len(f["value"]) == 3, "3 waiting")
            assert "subagent_id" not in state
            assert {e["request_id"] for e in state["value"]} == {r["request_id"] for r in asks.values()}
            # A client that connects now learns it from its first frame.
            async with reading(server, cid) as late_joiner:
                first_frame = await late_joiner.wait_for(lambda f: f.get("key") == "full_state", "full_state")
            assert {e["request_id"]: e.get("subagent_id") for e in first_frame["value"]["pending_permissions"]} == {
                r["request_id"]: r["subagent_id"] for r in asks.values()
            }

            # Out of order, from two clients: C over REST, A rejected by a socket frame, and B
            # answered by two clients at once: one wins.
            first = await answer(server, cid, asks["C"]["request_id"], option_id="allow_once")
            assert first.status_code == 200, first.text
            assert first.json()["outcome"] == "allowed" and first.json()["answered_by"] == "rest"
            await root.send({"type": "permission", "request_id": asks["A"]["request_id"],
                             "decision": "reject", "reason": "not on this machine"})
            reply = await root.wait_for(lambda f: f.get("type") == "permission_answer", "the socket's answer")
            assert reply["status"] == 200 and reply["request_id"] == asks["A"]["request_id"]
            assert reply["event"]["outcome"] == "rejected" and reply["event"]["answered_by"] == "socket"
            path = f"/api/conversations/{cid}/permissions/{asks['B']['request_id']}"
            race = await asyncio.gather(server.client.post(path, json={"decision": "allow"}),
                                        other.post(path, json={"decision": "reject", "reason": "too late"}))
            assert sorted(r.status_code for r in race) == [200, 409]
            winner = next(r for r in race if r.status_code == 200).json()
            late = next(r for r in race if r.status_code == 409).json()
            assert late["code"] == "permission_resolved"
            again = await answer(server, cid, asks["C"]["request_id"], decision="reject")
            assert again.status_code == 409

            done = await wait_for_status(server.client, cid, {"finished", "error"})
            assert done["status"] == "finished"
            frames = list(root.frames)

        # The rejected sub-agent's next model request holds the refusal and the person's reason;
        # the others' hold their tool's output.
        calls = {name: asks[name]["tool_call_id"] for name in "ABC"}
        a_result = tool_results(model_requests(log, "sub-a", 1)[0])[calls["A"]]
        assert "rejected" in a_result and "not on this machine" in a_result
        assert "from-c" in tool_results(model_requests(log, "sub-c", 1)[0])[calls["C"]]
        b_result = tool_results(model_requests(log, "sub-b", 1)[0])[calls["B"]]
        assert ("from-b" in b_result) == (winner["outcome"] == "allowed")

        everything = await all_events(server, cid, include_subagents="true")
        for name in "ABC":
            sub = tree[f"Work {name}"]
            own = [e for e in everything if e.get("subagent_id") == sub["subagent_id"]]
            kinds = [e["kind"] for e in own if e.get("tool_call_id") == calls[name]]
            # Stored in the asking agent's stream, stamped like its other events, in order:
            # the call, the question, the answer, then (allowed) the result.
            assert kinds == ["ActionEvent", "PermissionRequestEvent", "PermissionResolvedEvent", "ObservationEvent"]
            assert all(e["parent_tool_use_id"] == sub["parent_tool_use_id"] for e in own)
        observation = next(e for e in everything if e["kind"] == "ObservationEvent" and e["tool_call_id"] == calls["A"])
        assert observation["is_error"] and observation["status"] == "failed"
        assert "not on this machine" in observation["content"]
        # Nothing of it entered the root's own stream but the waiting set.
        own = await all_events(server, cid)
        assert not [e for e in own if e["kind"].startswith("Permission")]
        sets = pending_sets(own)
        assert max(len(s) for s in sets) == 3 and sets[-1] == set()
        assert all(len(b) - len(a) in (-1, 1) for a, b in zip(sets, sets[1:]))
        listed = {e["request_id"]: e for e in (await server.client.get(
            f"/api/conversations/{cid}/permissions", params={"status": "all"})).json()}
        assert {listed[asks[n]["request_id"]]["status"] for n in "AC"} == {"rejected", "allowed"}
        assert listed[asks["A"]["request_id"]]["resolution"]["reason"] == "not on this machine"
        assert await wait_pending(server, cid, 0) == []

    stamped = [f for f in frames if f.get("subagent_id")]
    requests = [f for f in frames if f.get("kind") == "PermissionRequestEvent"]
    if forwarding:
        # Live and stamped on the root's socket, each under its own sub-agent.
        assert {(r["subagent_id"], r["parent_tool_use_id"]) for r in requests} == {
            (tree[f"Work {n}"]["subagent_id"], tree[f"Work {n}"]["parent_tool_use_id"]) for n in "ABC"
        }
        assert {f["kind"] for f in stamped} >= {"PermissionRequestEvent", "PermissionResolvedEvent"}
    else:
        # Exactly the root's own stream: nothing stamped, yet the waiting set came and went.
        assert stamped == [] and requests == []
    socket_sets = pending_sets([f for f in frames if f.get("seq") is not None])
    assert max(len(s) for s in socket_sets) == 3 and socket_sets[-1] == set()
