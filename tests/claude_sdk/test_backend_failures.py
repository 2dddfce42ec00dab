"""How a claude_sdk conversation fails: readable errors in its stream, never a hang."""

from __future__ import annotations

import os
from pathlib import Path

from taskwire.claude_sdk.transcript import dump_transcript
from taskwire.events.closing import INTERRUPTED, STOPPED_BEFORE_RUN
from tests.api.helpers import all_events, create
from tests.claude_sdk.sdk_messages import assistant, message_start, tool_start, tool_use
from tests.claude_sdk.watch import call_text, call_statuses, last_call, replay_agent
from tests.servers import RunningServer, wait_for_status



async def test_a_missing_cli_fails_the_run_with_a_readable_error(server: RunningServer, tmp_path: Path) -> None:
    agent = {"kind": "claude_sdk", "cli_path": str(tmp_path / "no-such-claude")}
    conversation = (await create(server, agent=agent, initial_message="hello"))["id"]

    assert (await wait_for_status(server.client, conversation, {"error", "finished"}))["status"] == "error"
    [error] = [e for e in await all_events(server, conversation) if e["kind"] == "AgentErrorEvent"]
    assert error["code"] == "claude_cli_not_found"
    assert "no-such-claude" in error["error"]


async def test_a_turn_that_never_ends_fails_after_the_idle_timeout_and_closes_its_calls(
    server: RunningServer, tmp_path: Path
) -> None:
    transcript = tmp_path / "silent.sdk.jsonl"
    dump_transcript(
        [
            message_start("msg_main_0"),
            tool_start(0, "toolu_running", "Bash"),
            assistant(tool_use("toolu_running", "Bash", command="make"), message_id="msg_main_0"),
            tool_start(1, "toolu_streaming", "Bash"),
            # ... and then Claude Code goes silent: no result, ever.
        ],
        transcript,
    )
    agent = replay_agent(transcript, idle_timeout=0.2)
    conversation = (await create(server, agent=agent, initial_message="build it"))["id"]

    assert (await wait_for_status(server.client, conversation, {"error", "finished"}))["status"] == "error"
    events = await all_events(server, conversation)
    [error] = [e for e in events if e["kind"] == "AgentErrorEvent"]
    assert error["code"] == "idle_timeout"
    assert call_statuses(events, "toolu_running")[-1] == "failed"
    assert call_text(last_call(events, "toolu_running")) == INTERRUPTED
    assert call_statuses(events, "toolu_streaming") == ["pending", "cancelled"]
    assert call_text(last_call(events, "toolu_streaming")) == STOPPED_BEFORE_RUN


async def test_an_invalid_agent_spec_is_refused_with_422(server: RunningServer) -> None:
    response = await server.client.post(
        "/api/conversations", json={"agent": {"kind": "claude_sdk", "permission_mode": "yolo"}}
    )
    assert response.status_code == 422


async def test_a_replay_file_is_read_only_under_the_roots_and_never_quoted(server: RunningServer, tmp_path: Path) -> None:
    # ``replay`` is a path from the request: it may not read the server's files, block on a
    # FIFO, or echo what a file holds.
    secret = "hunter2-do-not-print"
    outside = tmp_path.parent / f"{tmp_path.name}-outside.jsonl"
    outside.write_text(f'{{"type": "{secret}"}}\n')
    not_a_transcript = tmp_path / "notes.jsonl"
    dump_transcript([message_start("msg_main_0")], not_a_transcript)
    with not_a_transcript.open("a") as file:
        file.write(f'{{"type": "{secret}"}}\n')
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    expected = {
        "/etc/passwd": "transcript_outside_roots", str(outside): "transcript_outside_roots",
        str(tmp_path / "absent.jsonl"): "transcript_not_found", str(fifo): "transcript_unreadable",
        str(tmp_path / "nul\x00.jsonl"): "transcript_unreadable",
        str(not_a_transcript): "bad_transcript",
    }
    for path, code in expected.items():
        conversation = (await create(server, agent=replay_agent(Path(path)), initial_message="go"))["id"]
        assert (await wait_for_status(server.client, conversation, {"error", "finished"}))["status"] == "error"
        [error] = [e for e in await all_events(server, conversation) if e["kind"] == "AgentErrorEvent"]
        assert (error["code"], secret in error["error"]) == (code, False), error
    assert "line 2" in error["error"]
