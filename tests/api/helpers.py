"""Small helpers that speak the API's domain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.servers import REPO, RunningServer

TESTS = REPO / "tests"


def scripted_agent(script: str, **extra: Any) -> dict[str, Any]:
    """A native agent run by the scripted LLM with ``script`` (a path or inline YAML). A test's
    own script file (under ``tests/``) goes inline: a request may name only files under the
    config folder and the workspace roots."""
    if "\n" not in script and Path(script).resolve().is_relative_to(TESTS):
        script = Path(script).read_text()
    return {"kind": "native", "llm": {"api": "scripted", "script": script}, **extra}


async def create(server: RunningServer, **body: Any) -> dict[str, Any]:
    response = await server.client.post("/api/conversations", json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def all_events(server: RunningServer, conversation_id: str, **params: Any) -> list[dict[str, Any]]:
    """Every event matching ``params``, across pages, in ``seq`` order."""
    events: list[dict[str, Any]] = []
    page_id = None
    while True:
        query = {**params, "limit": 100, **({"page_id": page_id} if page_id else {})}
        response = await server.client.get(f"/api/conversations/{conversation_id}/events/search", params=query)
        assert response.status_code == 200, response.text
        page = response.json()
        events.extend(page["items"])
        page_id = page["next_page_id"]
        if page_id is None:
            return events
