"""The recorded SDK transcript of real Claude Code with two parallel sub-agents, replayed through
the dispatcher and through the real server: each sub-agent's messages land in its own stream,
stamped, and the main agent's turn holds exactly the main agent's text and calls."""

from __future__ import annotations

from pathlib import Path

from taskwire.claude_sdk import ROOT, ClaudeDispatcher, TurnEnded
from taskwire.claude_sdk.transcript import load_transcript
from tests.api.helpers import all_events, create
from tests.api.socket_client import next_frame, open_socket
from tests.claude_sdk.sdk_messages import Transcript
from tests.claude_sdk.watch import (
    assert_stamped,
    assistant_texts,
    call_ids,
    call_statuses,
    frames_until_run_ends,
    replay_agent,
    root_frames,
    say,
)
from tests.servers import isolated_settings, taskwire_server

RECORDING = Path(__file__).parent / "two_subagents.sdk.jsonl"
MAIN_TEXTS = [
    "I'll run the command first.",
    "Now spawning two subagents in parallel.",
    "All done: main-agent, subagent-a and subagent-b were echoed.",
]
MAIN_CALLS = {"toolu_main_0_1_0002", "toolu_main_1_1_0005", "toolu_main_1_2_0006"}
SUBAGENT_CALLS = {"toolu_main_1_1_0005": "toolu_subagenta_0_0_0009", "toolu_main_1_2_0006": "toolu_subagentb_0_0_0012"}
SUBAGENT_ANSWERS = {
    "toolu_main_1_1_0005": "subagent-a done: the command printed subagent-a.",
    "toolu_main_1_2_0006": "subagent-b done: the command printed subagent-b.",
}


def test_replayed_recording_partitions_every_message_by_lane() -> None:
    dispatcher, log = ClaudeDispatcher(), Transcript()
    dispatcher.begin_turn("prompt")
    for message in load_transcript(RECORDING):
        log.add(dispatcher.feed(message))

    assert log.lanes() == {ROOT, *SUBAGENT_CALLS}
    assert log.messages(ROOT) == MAIN_TEXTS
    assert call_ids_of(log, ROOT) == MAIN_CALLS
    for lane, sub_call in SUBAGENT_CALLS.items():
        assert call_ids_of(log, lane) == {sub_call}
        assert log.statuses(lane, sub_call) == ["in_progress", "completed"]
        assert log.kinds(lane)[0] == "SubagentStartedEvent" and log.kinds(lane)[-1] == "SubagentFinishedEvent"
        assert log.events(lane)[-1].result == SUBAGENT_ANSWERS[lane]  # type: ignore[attr-defined]
    assert log.turn_ends() == [TurnEnded(MAIN_TEXTS[-1])]
    assert dispatcher.ignored == 0


def call_ids_of(log: Transcript, lane: str | None) -> set[str]:
    return {e.tool_call_id for e in log.events(lane) if e.kind == "ACPToolCallEvent"}  # type: ignore[attr-defined]


async def test_replay_through_the_server_lands_subagents_in_their_own_stamped_streams(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        conversation = (await create(server, agent=replay_agent(RECORDING), run=False))["id"]
        async with open_socket(server, conversation) as ws:
            await next_frame(ws)  # full_state
            await say(server, conversation, "Run echo main-agent, then two sub-agents.")
            frames = await frames_until_run_ends(ws)

        assert frames[-1]["value"] == "finished"
        root = root_frames(frames)
        assert assistant_texts(root) == MAIN_TEXTS
        assert call_ids(root) == MAIN_CALLS
        assert all(call_statuses(root, call)[-1] == "completed" for call in MAIN_CALLS)
        stored_root = await all_events(server, conversation)
        assert assistant_texts(stored_root) == MAIN_TEXTS and call_ids(stored_root) == MAIN_CALLS
        assert not any("parent_tool_use_id" in e or "subagent_id" in e for e in stored_root)

        subagents = (await server.client.get(f"/api/conversations/{conversation}/subagents")).json()
        assert {s["parent_tool_use_id"]: s["status"] for s in subagents} == dict.fromkeys(SUBAGENT_CALLS, "completed")
        for entry in subagents:
            spawned_by, subagent_id = entry["parent_tool_use_id"], entry["subagent_id"]
            assert entry["result"] == SUBAGENT_ANSWERS[spawned_by]
            own = await all_events(server, subagent_id)
            for event in own:
                assert_stamped(event, tool_call_id=spawned_by, subagent_id=subagent_id)
            assert [e["kind"] for e in own][0] == "SubagentStartedEvent"
            assert [e["kind"] for e in own][-1] == "SubagentFinishedEvent"
            assert call_ids(own) == {SUBAGENT_CALLS[spawned_by]}
            # Forwarded live to the root's socket, stamped, in the same order as stored.
            live = [f["id"] for f in frames if f.get("subagent_id") == subagent_id and "seq" in f]
            assert live == [e["id"] for e in own]


async def test_with_forwarding_off_the_socket_sees_only_the_main_agent(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        conversation = (await create(server, agent=replay_agent(RECORDING), run=False))["id"]
        async with open_socket(server, conversation) as ws:
            await next_frame(ws)
            await say(server, conversation, "go")
            frames = await frames_until_run_ends(ws)

        assert root_frames(frames) == frames
        assert assistant_texts(frames) == MAIN_TEXTS
        stored = {e["id"] for e in await all_events(server, conversation)}
        assert {f["id"] for f in frames if "seq" in f} <= stored
        subagents = (await server.client.get(f"/api/conversations/{conversation}/subagents")).json()
        assert len(subagents) == 2 and all(s["event_count"] > 2 for s in subagents)
