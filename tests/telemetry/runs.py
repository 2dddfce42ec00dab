"""The runs the tracing tests trace: taskwire's own agents, and a recorded Claude Code session."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx

from taskwire.events import EventRecord
from taskwire.store import EventQuery, Store

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "two_subagents_nested.yaml"
"""Two sub-agents in parallel, the first with a sub-agent of its own (depth 2)."""
ACP_FIXTURE = HERE.parent / "acp" / "fixtures" / "two_subagents.acp.jsonl"
"""claude-agent-acp and Claude Code: two sub-agents in parallel (recorded)."""
REPLAY_AGENT = HERE.parent / "acp" / "replay_agent.py"
DONE = {"finished", "error", "paused"}


def native_agent() -> dict[str, Any]:
    return {"kind": "native", "llm": {"api": "scripted", "script": SCRIPT.read_text()}}


def recorded_claude_code() -> dict[str, Any]:
    """An ``acp`` agent replaying the recorded Claude Code session."""
    return {"kind": "acp", "command": sys.executable, "args": [str(REPLAY_AGENT), str(ACP_FIXTURE)], "startup_timeout": 60}


async def run_to_end(client: httpx.AsyncClient, agent: dict[str, Any], message: str = "go") -> str:
    """Start a conversation running ``agent``; return its id once the run has ended."""
    from tests.servers import wait_for_status
    from tests.services import wait_until

    response = await client.post("/api/conversations", json={"agent": agent, "initial_message": message})
    assert response.status_code == 201, response.text
    conversation_id = response.json()["id"]
    info = await wait_for_status(client, conversation_id, DONE, timeout=120)
    assert info["status"] == "finished", info
    await wait_until(lambda: status_recorded(client, conversation_id), timeout=30, what="the run's last status event")
    return conversation_id


async def status_recorded(client: httpx.AsyncClient, conversation_id: str) -> bool:
    """Whether the status REST shows is stored as an event too (its record is written just
    after the conversation's row, so a reader can see the row first)."""
    params = {"kind": "ConversationStateUpdateEvent", "sort_order": "TIMESTAMP_DESC", "limit": 5}
    page = (await client.get(f"/api/conversations/{conversation_id}/events/search", params=params)).json()
    return any(e["key"] == "status" and e["value"] in DONE for e in page["items"])


async def subagents(client: httpx.AsyncClient, conversation_id: str) -> list[dict[str, Any]]:
    response = await client.get(f"/api/conversations/{conversation_id}/subagents")
    assert response.status_code == 200, response.text
    return response.json()


async def tree_records(store: Store, root_id: str) -> list[EventRecord]:
    """Every stored record of the tree, in ``seq`` order."""
    records: list[EventRecord] = []
    page_id = None
    while True:
        page = await store.search(EventQuery(root_id=root_id), limit=100, page_id=page_id)
        records.extend(page.items)
        page_id = page.next_page_id
        if page_id is None:
            return records


async def expected_span_count(client: httpx.AsyncClient, conversation_id: str) -> int:
    """How many spans a run of ``conversation_id`` makes: the run, each sub-agent, each tool
    call and each LLM request taskwire made (its ``usage`` updates that say when it started)."""
    events, page_id = [], None
    while True:
        params = {"include_subagents": "true", "limit": 100, **({"page_id": page_id} if page_id else {})}
        page = (await client.get(f"/api/conversations/{conversation_id}/events/search", params=params)).json()
        events.extend(page["items"])
        page_id = page["next_page_id"]
        if page_id is None:
            break
    calls = {(e.get("subagent_id"), e["tool_call_id"]) for e in events if e["kind"] in ("ActionEvent", "ACPToolCallEvent")}
    started = sum(e["kind"] == "SubagentStartedEvent" for e in events)
    chats = sum(
        e["kind"] == "ConversationStateUpdateEvent" and e["key"] == "usage" and "started_at" in e["value"].get("added", {})
        for e in events
    )
    return 1 + started + len(calls) + chats
