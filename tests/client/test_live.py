"""``LiveEvents`` against a real server: every stored event once, in order; refusals are clear."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskwire_client import Client, StreamRefused, Tree, Unreachable, root_status, run_ended_text
from taskwire.events import ConversationStateUpdateEvent
from tests.conftest import REPO
from tests.servers import isolated_settings, taskwire_server

DEMO = str(REPO / "config/demo/two_subagents.yaml")
KEY = "client-key"


def scripted(script: str) -> dict[str, object]:
    return {"kind": "native", "llm": {"api": "scripted", "script": script}}


async def stored_seqs(client: Client, conversation_id: str) -> list[int]:
    return [e.seq async for e in client.search(conversation_id, include_subagents=True) if e.seq is not None]


async def test_a_live_run_arrives_once_in_order_and_the_stream_ends_with_the_run(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        async with Client(server.url) as client:
            conversation = await client.create(agent=scripted(DEMO), initial_message="Go.")
            live = client.events(conversation["id"], until_run_ends=True)
            events = [event async for event in live]
            seqs = await stored_seqs(client, conversation["id"])
    assert isinstance(events[0], ConversationStateUpdateEvent) and events[0].key == "full_state"
    assert [e.seq for e in events if e.seq is not None] == seqs
    assert root_status(events[-1]) == "finished" and live.status == "finished"
    assert {e.subagent_id for e in events} - {None}, "forwarded sub-agent events are in the stream"


async def test_resuming_after_a_seq_gives_only_what_came_later_and_a_finished_run_ends_at_once(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        async with Client(server.url) as client:
            conversation = await client.create(agent=scripted(DEMO), initial_message="Go.")
            everything = [e async for e in client.events(conversation["id"], until_run_ends=True)]
            middle = everything[len(everything) // 2].seq or 1
            later = [e async for e in client.events(conversation["id"], after_seq=middle, until_run_ends=True)]
            last = everything[-1].seq or 0
            caught_up = [e async for e in client.events(conversation["id"], after_seq=last, until_run_ends=True)]
    assert [e.seq for e in later if e.seq is not None] == [e.seq for e in everything if (e.seq or 0) > middle]
    assert [e.key for e in caught_up] == ["full_state"]  # type: ignore[attr-defined]


async def test_the_tree_of_a_live_run_holds_both_subagents_under_their_task_calls(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        async with Client(server.url) as client:
            conversation = await client.create(agent=scripted(DEMO), initial_message="Go.")
            tree = Tree(conversation["id"])
            async for event in client.events(conversation["id"], until_run_ends=True):
                tree.apply(event)
            info = await client.get(conversation["id"])
    outline = tree.outline()
    assert "  general-purpose task-1 Echo subagent-a: completed" in outline
    assert "    terminal echo subagent-a: completed" in outline
    assert tree.status == "finished" and tree.usage is not None
    assert (tree.usage.input_tokens, tree.usage.output_tokens) == (info["usage"]["input_tokens"], info["usage"]["output_tokens"])


async def test_a_wrong_key_and_an_unknown_conversation_are_refused_not_retried(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, session_api_keys=[KEY])) as server:
        async with Client(server.url, api_key=KEY) as client:
            conversation = await client.create(agent=scripted(DEMO))
            with pytest.raises(StreamRefused) as unknown:
                [e async for e in client.events("no-such-conversation")]
        async with Client(server.url, api_key="wrong") as stranger:
            with pytest.raises(StreamRefused) as unauthorized:
                [e async for e in stranger.events(conversation["id"])]
    assert unknown.value.code == 4004 and "not found" in unknown.value.reason
    assert unauthorized.value.code == 4001


async def test_a_server_that_never_answered_is_unreachable_at_once() -> None:
    async with Client("http://127.0.0.1:9") as client:
        with pytest.raises(Unreachable, match="cannot reach"):
            [e async for e in client.events("anything")]
        with pytest.raises(Unreachable, match="cannot reach"):
            await client.get("anything")


async def test_leaving_early_closes_the_socket(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        async with Client(server.url) as client:
            conversation = await client.create(agent=scripted(DEMO))
            async with client.events(conversation["id"]) as live:
                async for event in live:
                    break
            assert live.connections == 1
            assert event.key == "full_state"  # type: ignore[attr-defined]


async def test_a_run_that_ends_in_error_carries_the_agents_reason(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        async with Client(server.url) as client:
            conversation = await client.create(agent=scripted("/etc/hostname"), initial_message="Go.")
            live = client.events(conversation["id"], until_run_ends=True)
            _ = [event async for event in live]
    assert live.status == "error"
    assert live.error is not None and "outside the config folder" in live.error
    assert run_ended_text(live.status, live.error) == f"error: {live.error}"
    assert run_ended_text("finished", None) == "finished"
