"""The closing rule as clients see it, through the real server and real sockets.

The input is a transcript of SDK messages (built from the SDK's dataclasses) that the backend
plays instead of starting Claude Code (``agent.replay``): the same backend, dispatcher, host and
socket path as with the real CLI, only the source of messages differs. Real Claude Code cannot
be made to drop a streamed call on cue; a transcript can.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taskwire.claude_sdk.transcript import dump_transcript
from taskwire.events.closing import INTERRUPTED, STOPPED_BEFORE_RUN
from tests.api.helpers import all_events, create
from tests.api.socket_client import next_frame, open_socket
from tests.claude_sdk.sdk_messages import (
    assistant,
    json_delta,
    message_end,
    message_start,
    result,
    streamed_call,
    text,
    tool_start,
    tool_use,
)
from tests.claude_sdk.watch import (
    call_statuses,
    call_text,
    frames_until_run_ends,
    last_call,
    replay_agent,
    say,
)
from tests.servers import RunningServer

DROPPED = [
    message_start("msg_main_0"),
    tool_start(0, "toolu_dropped", "Bash"),
    json_delta(0, '{"command": "rm -'),
    *message_end(stop_reason="tool_use"),
    assistant(text("Never mind."), message_id="msg_main_1"),
    result("Never mind.", None),
]
RAN_WITHOUT_RESULT = [
    message_start("msg_main_0"),
    *streamed_call(0, tool_use("toolu_lost", "Bash", command="echo lost"), message_id="msg_main_0"),
    *message_end(stop_reason="tool_use"),
    result("", None),
]


async def run_watched(server: RunningServer, transcript: list[Any], tmp_path: Path) -> dict[int, list[dict[str, Any]]]:
    """Play ``transcript`` in a new conversation watched by an ``event_schema=1`` and an
    ``event_schema=2`` socket at once; each socket's frames up to the end of the run."""
    path = tmp_path / "transcript.sdk.jsonl"
    dump_transcript(transcript, path)
    conversation = (await create(server, agent=replay_agent(path), run=False))["id"]
    async with (
        open_socket(server, conversation, event_schema=1) as old,
        open_socket(server, conversation, event_schema=2) as new,
    ):
        await next_frame(old)
        await next_frame(new)
        await say(server, conversation, "go")
        return {1: await frames_until_run_ends(old), 2: await frames_until_run_ends(new)}



async def test_dropped_call_is_pending_then_cancelled_and_the_turn_ends_normally(
    server: RunningServer, tmp_path: Path
) -> None:
    frames = await run_watched(server, DROPPED, tmp_path)

    assert call_statuses(frames[2], "toolu_dropped") == ["pending", "cancelled"]
    assert call_text(last_call(frames[2], "toolu_dropped")) == STOPPED_BEFORE_RUN
    assert frames[2][-1]["value"] == "finished"
    assert not [f for f in frames[2] if f["kind"] == "AgentErrorEvent"]


async def test_dropped_call_reaches_an_event_schema_1_client_as_failed_with_the_same_text(
    server: RunningServer, tmp_path: Path
) -> None:
    frames = await run_watched(server, DROPPED, tmp_path)

    assert call_statuses(frames[1], "toolu_dropped") == ["pending", "failed"]
    assert call_text(last_call(frames[1], "toolu_dropped")) == call_text(last_call(frames[2], "toolu_dropped"))
    assert frames[1][-1]["value"] == "finished"


async def test_call_that_ran_without_a_result_fails_and_fails_the_turn(server: RunningServer, tmp_path: Path) -> None:
    frames = await run_watched(server, RAN_WITHOUT_RESULT, tmp_path)

    for schema in (1, 2):
        assert call_statuses(frames[schema], "toolu_lost") == ["pending", "in_progress", "failed"]
        assert call_text(last_call(frames[schema], "toolu_lost")) == INTERRUPTED
        [error] = [f for f in frames[schema] if f["kind"] == "AgentErrorEvent"]
        assert error["code"] == "incomplete_tool_call"
        assert frames[schema][-1]["value"] == "error"


async def test_the_stored_stream_keeps_cancelled_whatever_the_clients(server: RunningServer, tmp_path: Path) -> None:
    await run_watched(server, DROPPED, tmp_path)
    conversation = (await server.client.get("/api/conversations/search")).json()["items"][0]["id"]

    assert call_statuses(await all_events(server, conversation), "toolu_dropped") == ["pending", "cancelled"]
