"""A large transcript to replay is read and parsed off the event loop: it still replays whole,
and a load cancelled half way leaves nothing behind (the next one reads the whole file)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from taskwire.claude_sdk.replay import ReplaySession
from taskwire.claude_sdk.transcript import load_transcript
from tests.api.helpers import create
from tests.api.socket_client import next_frame, open_socket
from tests.claude_sdk.large_transcript import RECORDING, padded_transcript
from tests.claude_sdk.test_recorded_two_subagents import MAIN_TEXTS, SUBAGENT_ANSWERS
from tests.claude_sdk.watch import assistant_texts, frames_until_run_ends, replay_agent, root_frames, say
from tests.servers import isolated_settings, taskwire_server

MIB = 24


async def test_a_large_transcript_replays_whole_through_the_server(tmp_path: Path) -> None:
    transcript = tmp_path / "workspace" / "large.sdk.jsonl"
    transcript.parent.mkdir()
    padded_transcript(transcript, MIB)
    settings = isolated_settings(tmp_path, workspace_roots=[str(transcript.parent)])
    async with taskwire_server(settings) as server:
        conversation = (await create(server, agent=replay_agent(transcript), run=False))["id"]
        async with open_socket(server, conversation) as ws:
            await next_frame(ws)
            await say(server, conversation, "go")
            frames = await frames_until_run_ends(ws)
        subagents = (await server.client.get(f"/api/conversations/{conversation}/subagents")).json()
    assert frames[-1]["value"] == "finished"
    assert assistant_texts(root_frames(frames)) == MAIN_TEXTS
    assert {s["parent_tool_use_id"]: s["result"] for s in subagents} == SUBAGENT_ANSWERS


async def test_a_load_cancelled_while_reading_leaves_nothing_and_the_next_reads_it_all(tmp_path: Path) -> None:
    transcript = tmp_path / "large.sdk.jsonl"
    lines = padded_transcript(transcript, MIB)
    loading = asyncio.create_task(ReplaySession.load(transcript, [tmp_path]))
    await asyncio.sleep(0)  # the thread is reading
    loading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await loading
    session = await ReplaySession.load(transcript, [tmp_path])
    whole = load_transcript(transcript, [tmp_path])
    assert len(whole) == lines
    assert [type(m) for turn in session._turns for m in turn] == [type(m) for m in whole]
    assert len(load_transcript(RECORDING)) < lines  # the padding is there
