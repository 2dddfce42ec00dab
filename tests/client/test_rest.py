"""The client's REST helpers against a real server: what they return and how errors read."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskwire_client import APIError, Client, Tree
from taskwire.events import MessageEvent
from tests.servers import isolated_settings, taskwire_server, wait_for_status
from tests.viewer.gates import Gates, gated_subagents_script


async def test_search_follows_pages_to_the_end_and_count_agrees(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        async with Client(server.url) as client:
            conversation = await client.create()
            for n in range(7):
                await client.send(conversation["id"], f"note {n}", run=False)
            first = await client.search_page(conversation["id"], kind="MessageEvent", limit=3)
            notes = [e async for e in client.search(conversation["id"], kind="MessageEvent", limit=3)]
            count = await client.count(conversation["id"], kind="MessageEvent")
            listed = [c["id"] async for c in client.conversations()]
    assert len(first.items) == 3 and first.next_page_id is not None
    assert all(isinstance(e, MessageEvent) for e in notes)
    assert [e.content for e in notes] == [f"note {n}" for n in range(7)]  # type: ignore[attr-defined]
    assert count == 7 and listed == [conversation["id"]]


async def test_errors_carry_the_servers_status_code_and_reason(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        async with Client(server.url) as client:
            with pytest.raises(APIError) as missing:
                await client.get("no-such-conversation")
            with pytest.raises(APIError) as invalid:
                await client.create(agent={"kind": "nonsense"})
    assert (missing.value.status, missing.value.code) == (404, "conversation_not_found")
    assert invalid.value.status == 422 and "agent" in invalid.value.detail


async def test_cancelling_one_subagent_leaves_its_sibling_running(tmp_path: Path) -> None:
    gates = Gates(tmp_path / "gates")
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        async with Client(server.url) as client:
            agent = {"kind": "native", "llm": {"api": "scripted", "script": gated_subagents_script(gates)}}
            conversation = await client.create(agent=agent, initial_message="Go.")
            tree = Tree(conversation["id"])
            async with client.events(conversation["id"]) as live:
                async for event in live:
                    tree.apply(event)
                    if len(tree.subagents) == 2:
                        break
            first, second = tree.subagents.values()
            await client.cancel_subagent(conversation["id"], first.subagent_id)
            gates.open("a", "b")
            await wait_for_status(server.client, conversation["id"], {"finished"})
            statuses = {s["subagent_id"]: s["status"] for s in await client.subagents(conversation["id"])}
    assert statuses == {first.subagent_id: "cancelled", second.subagent_id: "completed"}
