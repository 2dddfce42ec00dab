"""The viewer's routes: the page and its files (no auth: they hold no data) and ``GET /api/demo``."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.api.helpers import all_events
from tests.servers import isolated_settings, taskwire_server, wait_for_status

KEY = "viewer-routes-key"


async def test_page_and_its_modules_are_served_without_a_key(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, session_api_keys=[KEY])) as server:
        async with httpx.AsyncClient(base_url=server.url) as anonymous:
            page = await anonymous.get("/")
            module = await anonymous.get("/static/app.js")
            style = await anonymous.get("/static/style.css")
            missing = await anonymous.get("/static/nope.js")
            escape = await anonymous.get("/static/..%2Fapi%2Fviewer.py")
            demo = await anonymous.get("/api/demo")
            cached = await anonymous.get("/static/app.js", headers={"If-None-Match": module.headers["etag"]})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/static/app.js">' in page.text
    assert module.status_code == 200 and "javascript" in module.headers["content-type"]
    assert module.headers["cache-control"] == "no-cache" and cached.status_code == 304
    assert style.status_code == 200 and style.headers["content-type"].startswith("text/css")
    assert missing.status_code == 404 and escape.status_code == 404
    assert demo.status_code == 401  # data routes keep their key


async def test_demo_lists_the_scenarios_with_the_body_that_starts_each(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        demo = (await server.client.get("/api/demo")).json()
        paced = (await server.client.get("/api/demo", params={"pace": 0.2})).json()
        two = next(s for s in paced["scenarios"] if s["name"] == "two_subagents")
        created = await server.client.post("/api/conversations", json=two["request"])
        info = await wait_for_status(server.client, created.json()["id"], {"finished", "error"})
        tree = (await server.client.get(f"/api/conversations/{info['id']}/subagents")).json()
        own = await all_events(server, info["id"])
        listed = (await server.client.get("/api/conversations/search")).json()
        bad = await server.client.get("/api/demo", params={"pace": -1})
    assert demo["available"] is True and demo["default"] == "two_subagents"
    assert [s["name"] for s in demo["scenarios"]] == ["two_subagents", "nested", "hello"]
    first = demo["scenarios"][0]
    assert first["description"].startswith("The main agent runs a command")
    assert first["request"]["agent"]["llm"]["script"].endswith("config/demo/two_subagents.yaml")
    # Paced, the scenario is still named by its file: search results carry a name, not a script.
    assert two["request"]["agent"]["llm"] == {"api": "scripted", "script": first["request"]["agent"]["llm"]["script"], "pace": 0.2}
    assert info["agent"]["llm"]["script"].endswith("config/demo/two_subagents.yaml")
    assert [c["agent"]["llm"] for c in listed["items"]] == [two["request"]["agent"]["llm"]]
    assert info["status"] == "finished"
    assert sorted(s["description"] for s in tree) == ["Echo subagent-a", "Echo subagent-b"]
    assert own[1]["content"] == "Run the demo: a command, then two sub-agents in parallel."
    assert bad.status_code == 422


async def test_demo_is_not_offered_when_the_server_model_is_a_real_one(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, llm_api="openai", llm_base_url="http://127.0.0.1:9/v1")
    async with taskwire_server(settings) as server:
        demo = (await server.client.get("/api/demo")).json()
    assert demo == {"available": False, "default": None, "scenarios": []}
