"""The native agent's policy at work: inheritance, the server default, ``allow_always`` across
the tree, the timeout, and a policy of ``never`` leaving every wire as it was."""

from __future__ import annotations

import json
from pathlib import Path

from tests.api.helpers import all_events, create, scripted_agent
from tests.permissions.helpers import answer, finish, lane, one_asker_script, pending, pending_sets, reading, terminal, wait_pending
from tests.servers import isolated_settings, taskwire_server, wait_for_status

LENIENT = """---
name: lenient
description: A type that asks for nothing of its own.
approval: never
---
You do small jobs.
"""


async def test_a_type_saying_never_under_a_parent_that_asks_still_asks(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path)
    workspace = settings.workspace_path / "project"
    (workspace / ".agents" / "agents").mkdir(parents=True)
    (workspace / ".agents" / "agents" / "lenient.md").write_text(LENIENT)
    script = json.dumps({"strict": True, "lanes": [
        lane("sub", "Ask.", {"tool_calls": [terminal("echo inherited")]}, {"tool_calls": [finish("sub done")]}),
        lane("main", None, {"tool_calls": [{"name": "task", "arguments": {
            "description": "Lenient", "prompt": "Ask.", "subagent_type": "lenient"}}]},
             {"tool_calls": [finish("main done")]}),
    ]})
    async with taskwire_server(settings) as server:
        types = (await server.client.get("/api/sub-agents", params={"workspace": str(workspace)})).json()
        assert next(t for t in types if t["name"] == "lenient")["approval"] == "never"
        info = await create(server, agent=scripted_agent(script, approval="always"), workspace=str(workspace),
                            initial_message="Go.")
        [request] = await wait_pending(server, info["id"], 1)
        assert request["title"] == "echo inherited" and request["subagent_id"]
        assert (await answer(server, info["id"], request["request_id"], decision="allow")).status_code == 200
        assert (await wait_for_status(server.client, info["id"], {"finished", "error"}))["status"] == "finished"
        [sub] = (await server.client.get(f"/api/conversations/{info['id']}/subagents")).json()
        child = (await server.client.get(f"/api/conversations/{sub['subagent_id']}")).json()
        assert child["agent"]["approval"] == "always"


async def test_oh_approval_is_the_default_and_a_spec_saying_never_leaves_every_wire_as_it_was(tmp_path: Path) -> None:
    script = json.dumps({"lanes": [lane("main", None, {"tool_calls": [terminal("echo plain")]}, {"text": "done"})]})
    async with taskwire_server(isolated_settings(tmp_path, approval="terminal", forward_subagent_events=True)) as server:
        asked = await create(server, agent=scripted_agent(script), initial_message="Go.")
        [request] = await wait_pending(server, asked["id"], 1)
        assert request["tool_name"] == "terminal" and "subagent_id" not in request
        await answer(server, asked["id"], request["request_id"], decision="allow")
        assert (await wait_for_status(server.client, asked["id"], {"finished"}))["status"] == "finished"

        plain = await create(server, agent=scripted_agent(script, approval="never"), initial_message="Go.")
        await wait_for_status(server.client, plain["id"], {"finished"})
        async with reading(server, plain["id"]) as socket:
            state = await socket.wait_for(lambda f: f.get("key") == "full_state", "full_state")
            await socket.wait_for(lambda f: f.get("seq") == state["value"]["last_seq"], "the replay")
        assert "pending_permissions" not in state["value"]
        everything = await all_events(server, plain["id"], include_subagents="true")
        assert not [e for e in everything if "Permission" in e["kind"] or e.get("key") == "pending_permissions"]
        assert not [f for f in socket.frames if "Permission" in f.get("kind", "") or f.get("key") == "pending_permissions"]
        assert await pending(server, plain["id"], status="all") == []


async def test_allow_always_holds_for_that_tool_in_the_whole_tree(tmp_path: Path) -> None:
    # The main agent runs two terminal calls at once, then one more; its sub-agent one more.
    script = json.dumps({"strict": True, "lanes": [
        lane("sub", "Later.", {"tool_calls": [terminal("echo sub")]}, {"tool_calls": [finish("sub done")]}),
        lane("main", None,
             {"tool_calls": [terminal("echo one"), terminal("echo two")]},
             {"tool_calls": [terminal("echo three"),
                             {"name": "task", "arguments": {"description": "Later", "prompt": "Later."}}]},
             {"tool_calls": [finish("done")]}),
    ]})
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        info = await create(server, agent=scripted_agent(script, approval=["terminal"]), initial_message="Go.")
        cid = info["id"]
        first, second = await wait_pending(server, cid, 2)
        resolved = await answer(server, cid, first["request_id"], option_id="allow_always")
        assert resolved.status_code == 200
        assert (await wait_for_status(server.client, cid, {"finished", "error"}))["status"] == "finished"
        listed = {e["title"]: e for e in await pending(server, cid, status="all")}
        assert set(listed) == {"echo one", "echo two", "echo three", "echo sub"}
        # The one a person answered; the other that waited with it, and every later one, by policy.
        assert listed[first["title"]]["resolution"]["answered_by"] == "rest"
        by_policy = [e for title, e in listed.items() if title != first["title"]]
        assert {e["resolution"]["answered_by"] for e in by_policy} == {"policy"}
        assert {e["resolution"]["option_id"] for e in by_policy} == {"allow_always"}
        assert all(e["status"] == "allowed" for e in listed.values())
        assert second["title"] in listed
        everything = await all_events(server, cid, include_subagents="true")
        outputs = [e["content"] for e in everything if e["kind"] == "ObservationEvent" and e["tool_name"] == "terminal"]
        assert sorted(o.split()[-1] for o in outputs) == ["one", "sub", "three", "two"]
        # Only the two that waited for a person were ever pending. The stored sets follow the
        # changes in order but may skip one that lasted less than a write (both requests were
        # resolved at once here), so the pair may or may not have been stored together.
        sets = pending_sets(await all_events(server, cid))
        assert 1 <= max(len(s) for s in sets) <= 2 and not sets[-1]


async def test_a_request_nobody_answers_in_time_is_timed_out_and_the_model_goes_on(tmp_path: Path) -> None:
    script = one_asker_script("echo never-runs", after={"text": "I could not run it."})
    async with taskwire_server(isolated_settings(tmp_path, approval_timeout_s=0.3)) as server:
        info = await create(server, agent=scripted_agent(script, approval="always"), initial_message="Go.")
        assert (await wait_for_status(server.client, info["id"], {"finished", "error"}))["status"] == "finished"
        [entry] = await pending(server, info["id"], status="all")
        assert entry["status"] == "timed_out" and entry["resolution"]["answered_by"] == "timeout"
        late = await answer(server, info["id"], entry["request_id"], decision="allow")
        assert late.status_code == 409
        everything = await all_events(server, info["id"], include_subagents="true")
        result = next(e for e in everything if e["kind"] == "ObservationEvent" and e["tool_call_id"] == entry["tool_call_id"])
        assert result["is_error"] and "not given in time" in result["content"]
        assert not any("never-runs" in e.get("content", "") for e in everything if e["kind"] == "ObservationEvent")
