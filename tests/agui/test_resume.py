"""Resume: a client that drops the stream mid-run and reconnects with ``Last-Event-ID`` gets
every record after that id once, in order, then the live tail."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from tests.agui.checks import assert_valid
from tests.agui.client import assert_accepted, events, run_client
from tests.agui.sse_client import Frame, frames_of, read_all, run_input
from tests.api.helpers import all_events, create, scripted_agent
from tests.api.socket_client import produce
from tests.servers import isolated_settings, taskwire_server, wait_for_status

SCRIPT = str(Path(__file__).parent / "scripts" / "slow_subagents.yaml")


def comparable(frames: list[Frame]) -> list[dict[str, Any]]:
    """The events made from stored records, as any stream of the thread shows them: without
    the run's own framing and the sub-agents a resumed stream restates."""
    kept = []
    for _, event in frames:
        if event["type"] == "RUN_STARTED" or event.get("metadata", {}).get("taskwire", {}).get("restated"):
            continue
        if event["type"].startswith("TEXT_MESSAGE_"):
            continue  # the user's message: the run's own stream leaves it out
        # A stream that joined the run midway cannot count its tokens: it leaves usage out.
        kept.append({k: v for k, v in event.items() if k not in ("runId", "usage")})
    return kept


def complete_through(frames: list[Frame], last_id: int) -> list[Frame]:
    """What a client that saw ``frames`` and says ``Last-Event-ID: last_id`` has whole: up
    to the first event with that id (the one that completes its record)."""
    first = next(n for n, (sse_id, _) in enumerate(frames) if sse_id == last_id)
    return frames[: first + 1]


async def test_a_dropped_stream_resumes_after_its_last_event_id_missing_nothing_and_repeating_nothing(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        thread = str(uuid.uuid4())
        body = run_input(thread, "run-1", "Go.", forwardedProps={"taskwire": {"agent": scripted_agent(SCRIPT)}})
        before: list[Frame] = []
        async with server.client.stream("POST", "/agui", json=body) as response:
            async for frame in frames_of(response):
                before.append(frame)
                # Drop mid-record, inside a sub-agent: its call has started, its arguments not.
                if frame[1]["type"] == "TOOL_CALL_START" and "subagentRunId" in frame[1]:
                    break
        last_id = before[-1][0]
        headers = {"Last-Event-ID": str(last_id)}
        after = await read_all(server.client, "GET", f"/agui/{thread}", params={"until": "idle", "run_id": "run-1"}, headers=headers)
        await wait_for_status(server.client, thread, {"finished"})
        start = before[0][0]
        reference = await read_all(server.client, "GET", f"/agui/{thread}", params={"until": "idle", "after_seq": start})
        # The real client, reconnecting the same way once the run is over, accepts the stream.
        (followed,) = await run_client(server, {"op": "connect", "threadId": thread, "lastEventId": last_id, "query": "until=idle"})

    assert comparable(complete_through(before, last_id)) + comparable(after) == comparable(reference)
    ids = [sse_id for sse_id, _ in after]
    assert ids == sorted(ids) and ids[0] == last_id
    seqs = [sse_id for sse_id, _ in reference]
    assert ids[-1] == seqs[-1]
    # The resumed stream opens a run named as asked and restates the sub-agents still working.
    assert after[0][1]["type"] == "RUN_STARTED" and after[0][1]["runId"] == "run-1"
    restated = [e for _, e in after if e["type"] == "SUBAGENT_STARTED" and e.get("metadata")]
    assert restated and all(e["metadata"]["taskwire"]["restated"] is True for e in restated)
    assert after[-1][1]["type"] == "RUN_FINISHED" and "usage" not in after[-1][1]
    assert reference[-1][1]["usage"][0]["totalTokens"] > 0
    for stream in (after, reference):
        assert_valid([e for _, e in stream])
        # The id moves only at the event that completes a record, which names it in its
        # metadata too (for AG-UI clients, which drop SSE ids).
        for (previous, _), (sse_id, event) in zip(stream, stream[1:]):
            named = event.get("metadata", {}).get("taskwire", {}).get("seq")
            assert named == sse_id if sse_id != previous else named is None, event
    assert_accepted(followed)
    assert comparable([(0, e) for e in events(followed)]) == comparable(after)


async def test_a_follower_from_the_logs_end_sees_the_next_run_live(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        thread = str(uuid.uuid4())
        body = run_input(thread, "run-1", "Go.", forwardedProps={"taskwire": {"agent": scripted_agent(SCRIPT)}})
        ran = await read_all(server.client, "POST", "/agui", json=body)
        # Live from the log's end: the follower is connected before the second run starts.
        log_end = ran[-1][0]
        async with server.client.stream("GET", f"/agui/{thread}", headers={"Last-Event-ID": str(log_end)}) as response:
            await server.client.post(f"/api/conversations/{thread}/events", json={"content": "Again."})
            followed: list[Frame] = []
            async for frame in frames_of(response):
                followed.append(frame)
                if frame[1]["type"] in ("RUN_FINISHED", "RUN_ERROR"):
                    break

    sent = [e for _, e in followed]
    assert_valid(sent)
    assert sent[0]["type"] == "RUN_STARTED" and min(sse_id for sse_id, _ in followed) == log_end
    # The strict script has no fourth turn for the main agent: the run fails, and says why.
    assert sent[-1]["type"] == "RUN_ERROR" and "script exhausted" in sent[-1]["message"] and sent[-1]["code"] == "script_error"
    user = [e for e in sent if e["type"] == "TEXT_MESSAGE_START" and e["role"] == "user"]
    assert len(user) == 1 and "subagentRunId" not in user[0]


async def test_a_client_a_whole_queue_behind_is_told_where_to_resume_and_misses_nothing(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, ws_queue_size=8)) as server:
        conversation = (await create(server, agent=scripted_agent(SCRIPT), run=False))["id"]
        await produce(server, conversation, 5)
        before: list[Frame] = []
        async with server.client.stream("GET", f"/agui/{conversation}") as response:
            frames = frames_of(response)
            before.append(await anext(frames))  # then stop reading, while the agent goes on regardless
            subscription = server.app.state.bus.subscriptions(conversation)[0]
            produced = 0
            while not subscription.overflowed:  # the connection's buffers full, then the queue
                assert produced < 20_000, "the server kept sending to a client that reads nothing"
                await produce(server, conversation, 50, noise=32_000)
                produced += 50
            before += [frame async for frame in frames]
        closed = before[-1][1]
        assert (closed["type"], closed["name"], closed["value"]["code"]) == ("CUSTOM", "taskwire.stream_closed", "too_slow")
        resume = closed["value"]["lastEventId"]
        stored = await all_events(server, conversation)
        assert resume < stored[-1]["seq"]
        headers = {"Last-Event-ID": str(resume)}
        async with server.client.stream("GET", f"/agui/{conversation}", headers=headers) as response:
            after = []
            async for frame in frames_of(response):
                after.append(frame)
                if frame[0] == stored[-1]["seq"]:
                    break

    def messages(frames: list[Frame]) -> list[str]:
        return [e["messageId"] for _, e in frames if e["type"] == "TEXT_MESSAGE_START"]

    whole = complete_through(before, resume)
    assert messages(whole) + messages(after) == [e["id"] for e in stored if e["kind"] == "MessageEvent"]
