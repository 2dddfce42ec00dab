"""``GET /api/conversations/{id}/subagent_events/search`` and ``/count`` on the agent-server:
the frames the socket showed, every filter, pages of at most 100, a bad ``page_id`` refused,
the server's own authentication, the same answers after the server restarts."""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.openhands_plugin.agent_server import AgentServer, agent_server, everything, run_watched, stamped, start_conversation
from tests.openhands_plugin.helpers import CRITIC_PLUGIN, INNER_CALL, TREE_CALLS, mock_llm, workspace_with_agents

KEY = "plugin-test-key"


async def search(server: AgentServer, conversation: str, **params: Any) -> list[dict[str, Any]]:
    return await everything(server, f"/api/conversations/{conversation}/subagent_events/search", **params)


async def count(server: AgentServer, conversation: str, **params: Any) -> int:
    response = await server.client.get(f"/api/conversations/{conversation}/subagent_events/count", params=params)
    assert response.status_code == 200, response.text
    return response.json()


async def answers(server: AgentServer, conversation: str) -> dict[str, Any]:
    """What the routes answer for the tree, filter by filter."""
    every = await search(server, conversation)
    middle = sorted(e["timestamp"] for e in every)[len(every) // 2]
    beta = next(e["subagent_id"] for e in every if e["parent_tool_use_id"] == "call_main_0_1")
    filters: dict[str, dict[str, Any]] = {
        "plan": {"parent_tool_use_id": "call_main_0_0"}, "inner": {"parent_tool_use_id": INNER_CALL},
        "beta": {"subagent_id": beta}, "actions": {"kind": "ActionEvent"}, "users": {"source": "user"},
        "body": {"body": "PLAN JOB"}, "since": {"timestamp__gte": middle}, "before": {"timestamp__lt": middle},
        "plan actions": {"parent_tool_use_id": "call_main_0_0", "kind": "ActionEvent"},
    }
    found = {"every": every, "newest first": await search(server, conversation, sort_order="TIMESTAMP_DESC"),
             "pages of 3": await search(server, conversation, limit=3)}
    for name, params in filters.items():
        found[name] = await search(server, conversation, **params)
        found[f"{name} count"] = await count(server, conversation, **params)
    found["count"] = await count(server, conversation)
    return found


async def test_search_and_count_answer_with_the_frames_by_every_filter_and_after_a_restart(tmp_path: Path) -> None:
    config = {"session_api_keys": [KEY]}
    async with mock_llm(tmp_path, "tree") as llm, agent_server(tmp_path / "server", config=config) as server:
        conversation = await start_conversation(server, llm.url, workspace_with_agents(tmp_path / "ws"), concurrency=3,
                                                plugins=[{"source": str(CRITIC_PLUGIN)}])
        frames = await run_watched(server, conversation)
        before = await answers(server, conversation)
        await assert_refusals(server, conversation)
        # Searches their clients give up on half way leave nothing half done.
        async with httpx.AsyncClient(base_url=server.url, headers={"X-Session-API-Key": KEY}, timeout=0.001) as hasty:
            for _ in range(20):
                with contextlib.suppress(httpx.TimeoutException):
                    await hasty.get(f"/api/conversations/{conversation}/subagent_events/search", params={"limit": 7})
        assert await answers(server, conversation) == before

    every = before["every"]
    assert every == sorted(stamped(frames), key=lambda f: f["timestamp"])  # the frames the socket showed
    assert [e["timestamp"] for e in every] == sorted(e["timestamp"] for e in every)
    assert before["newest first"] == every[::-1] and before["pages of 3"] == every
    assert before["count"] == len(every)

    def under(*calls: str) -> list[dict[str, Any]]:
        return [e for e in every if e["parent_tool_use_id"] in calls]

    assert before["plan"] == under("call_main_0_0", INNER_CALL) and before["inner"] == under(INNER_CALL)
    assert before["beta"] == under("call_main_0_1")
    assert before["actions"] == [e for e in every if e["kind"] == "ActionEvent"]
    assert before["plan actions"] == [e for e in under("call_main_0_0", INNER_CALL) if e["kind"] == "ActionEvent"]
    assert before["users"] == [e for e in every if e["source"] == "user"]  # each sub-agent's prompt
    assert sorted(e["parent_tool_use_id"] for e in before["users"]) == sorted({*TREE_CALLS, INNER_CALL})
    assert [(e["kind"], e["parent_tool_use_id"]) for e in before["body"]] == [("MessageEvent", "call_main_0_0")]
    assert before["before"] + before["since"] == every and before["since"] and before["before"]
    for name in ("plan", "inner", "beta", "actions", "users", "body", "since", "before", "plan actions"):
        assert before[f"{name} count"] == len(before[name]), name

    # From what OpenHands persisted, after the server restarts.
    async with agent_server(tmp_path / "server", config=config) as again:
        assert await answers(again, conversation) == before


async def assert_refusals(server: AgentServer, conversation: str) -> None:
    path = f"/api/conversations/{conversation}/subagent_events"
    for page_id in (str(uuid.uuid4()), "not-an-id"):
        response = await server.client.get(f"{path}/search", params={"page_id": page_id})
        assert response.status_code == 400 and page_id in response.json()["detail"]
    # A page id of another search (here: the first page's start) is not a page of this one.
    first = (await server.client.get(f"{path}/search", params={"parent_tool_use_id": INNER_CALL})).json()["items"][0]
    response = await server.client.get(f"{path}/search", params={"page_id": first["id"], "parent_tool_use_id": "call_main_0_1"})
    assert response.status_code == 400
    for limit in (0, 101):
        assert (await server.client.get(f"{path}/search", params={"limit": limit})).status_code == 422
    assert (await server.client.get(f"{path}/search", params={"limit": 100})).status_code == 200
    assert (await server.client.get(f"{path}/search", params={"sort_order": "SIDEWAYS"})).status_code == 422
    assert (await server.client.get(f"{path}/search", params={"timestamp__gte": "yesterday"})).status_code == 422
    assert (await server.client.get(f"{path}/count", params={"timestamp__lt": "soon"})).status_code == 422
    assert (await server.client.get("/api/conversations/not-a-uuid/subagent_events/search")).status_code == 422
    unknown = f"/api/conversations/{uuid.uuid4()}/subagent_events"
    assert (await server.client.get(f"{unknown}/search")).status_code == 404
    assert (await server.client.get(f"{unknown}/count")).status_code == 404
    # The server's own authentication: the same answer as its /events routes without a key.
    async with httpx.AsyncClient(base_url=server.url) as anonymous:
        for route in (f"{path}/search", f"{path}/count", f"/api/conversations/{conversation}/events/search"):
            assert (await anonymous.get(route)).status_code == 401, route
            assert (await anonymous.get(route, headers={"X-Session-API-Key": "wrong"})).status_code == 401, route
