"""The event socket against a real server: auth, refusals, first frame, replay and live without
gaps or duplicates, resume, slow clients, inbound frames."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import AsyncIterator

import pytest

from taskwire.events import MessageEvent, ObservationEvent
from taskwire.stream import CloseCode
from tests.api.helpers import create
from tests.api.socket_client import (
    WAIT,
    next_frame,
    open_socket,
    produce,
    read_until_closed,
    read_until_seq,
    stored_seqs,
)
from tests.servers import RunningServer, isolated_settings, taskwire_server
from tests.stream.checks import assert_gapless, streams_of

KEY = "s3cret-key"


@pytest.fixture
async def secured(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with taskwire_server(isolated_settings(tmp_path, session_api_keys=[KEY])) as running:
        yield running


async def new_conversation(server: RunningServer) -> str:
    return (await create(server, run=False))["id"]


# -- auth and refusals --------------------------------------------------------------------


@pytest.mark.parametrize("way", ["header", "query", "frame"])
async def test_valid_key_opens_the_stream(secured: RunningServer, way: str) -> None:
    conversation = await new_conversation(secured)
    headers = {"X-Session-API-Key": KEY} if way == "header" else {}
    params = {"session_api_key": KEY} if way == "query" else {}
    async with open_socket(secured, conversation, headers=headers, **params) as ws:
        if way == "frame":
            await ws.send(json.dumps({"type": "auth", "session_api_key": KEY}))
        first = await next_frame(ws)
    assert (first["kind"], first["key"]) == ("ConversationStateUpdateEvent", "full_state")


@pytest.mark.parametrize("way", ["header", "query", "frame", "none"])
async def test_wrong_or_missing_key_closes_4001(secured: RunningServer, way: str) -> None:
    conversation = await new_conversation(secured)
    headers = {"X-Session-API-Key": "wrong"} if way == "header" else {}
    params = {"session_api_key": "wrong"} if way == "query" else {}
    async with open_socket(secured, conversation, headers=headers, **params) as ws:
        if way == "frame":
            await ws.send(json.dumps({"type": "auth", "session_api_key": "wrong"}))
        if way == "none":
            await ws.send(json.dumps({"type": "message", "content": "let me in"}))
        closed = await read_until_closed(ws)
    assert closed.code == CloseCode.UNAUTHORIZED
    assert closed.frames == []


async def test_silent_client_is_closed_4001_after_the_auth_timeout(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, session_api_keys=[KEY], ws_auth_timeout=0.5)
    async with taskwire_server(settings) as secured:
        conversation = await new_conversation(secured)
        async with open_socket(secured, conversation, headers={}) as ws:
            closed = await read_until_closed(ws)
    assert (closed.code, closed.reason) == (CloseCode.UNAUTHORIZED, "no auth frame within 0.5 s")


async def test_unknown_conversation_closes_4004(server: RunningServer) -> None:
    async with open_socket(server, "no-such-conversation") as ws:
        closed = await read_until_closed(ws)
    assert closed.code == CloseCode.UNKNOWN_CONVERSATION


@pytest.mark.parametrize(
    "params, problem",
    [
        ({"after_seq": "-3"}, "after_seq"),
        ({"event_schema": "7"}, "event_schema"),
        ({"subagents": "some"}, "subagents"),
        ({"resend_mode": "all", "after_seq": "4"}, "resend_mode=all"),
    ],
)
async def test_invalid_query_closes_with_bad_request_and_reason(
    server: RunningServer, params: dict[str, str], problem: str
) -> None:
    conversation = await new_conversation(server)
    async with open_socket(server, conversation, **params) as ws:
        closed = await read_until_closed(ws)
    assert closed.code == CloseCode.BAD_REQUEST
    assert problem in closed.reason


async def test_subscribers_past_the_limit_are_refused(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, max_subscribers=1)) as server:
        conversation = await new_conversation(server)
        async with open_socket(server, conversation) as first:
            await next_frame(first)
            async with open_socket(server, conversation) as second:
                closed = await read_until_closed(second)
            assert closed.code == CloseCode.TOO_MANY_SUBSCRIBERS
        async with open_socket(server, conversation) as again:  # the place was given back
            assert (await next_frame(again))["key"] == "full_state"


# -- the stream ----------------------------------------------------------------------------


async def test_first_frame_is_full_state_then_the_replay(server: RunningServer) -> None:
    conversation = await new_conversation(server)
    await produce(server, conversation, 30)
    seqs = await stored_seqs(server, conversation)
    async with open_socket(server, conversation) as ws:
        first = await next_frame(ws)
        frames = await read_until_seq(ws, seqs[-1])
    assert (first["kind"], first["key"]) == ("ConversationStateUpdateEvent", "full_state")
    assert "seq" not in first
    assert first["value"]["status"] == "idle"
    assert first["value"]["last_seq"] == seqs[-1]
    assert first["value"]["subagents"] == []
    assert_gapless(frames, seqs)


async def test_replay_and_live_are_gapless_while_events_pour_in(server: RunningServer) -> None:
    conversation = await new_conversation(server)
    await produce(server, conversation, 500)
    store = server.app.state.store

    async def pour() -> None:
        await produce(server, conversation, 3000, writers=8)
        await server.runtime.emit(conversation, MessageEvent(content="the end"))

    async def watch(joining_at: int) -> list[dict]:
        """Join when the log reaches ``joining_at`` and read, while it grows, to its end."""
        while await store.last_seq(conversation) < joining_at:
            await asyncio.sleep(0.005)
        async with open_socket(server, conversation) as ws:
            await next_frame(ws)
            frames = [await next_frame(ws)]
            while frames[-1].get("content") != "the end":
                frames.append(await next_frame(ws))
            return frames

    watchers = [asyncio.create_task(watch(n)) for n in (0, 700, 1500, 2500)]
    await pour()
    received = await asyncio.wait_for(asyncio.gather(*watchers), WAIT * 2)
    seqs = await stored_seqs(server, conversation)
    assert len(seqs) == 3502
    for frames in received:
        assert_gapless(frames, seqs)


async def test_events_emitted_without_waiting_arrive_in_order_and_stored(server: RunningServer) -> None:
    conversation = await new_conversation(server)
    async with open_socket(server, conversation, resend_mode="since") as ws:
        state = await next_frame(ws)
        await produce(server, conversation, 3000, writers=3, wait=False)
        await server.runtime.emit(conversation, MessageEvent(content="the end"))  # waits: all before are stored
        seqs = await stored_seqs(server, conversation)
        frames = await read_until_seq(ws, seqs[-1])
    assert len(seqs) == state["value"]["last_seq"] + 3001
    assert_gapless(frames, seqs[seqs.index(state["value"]["last_seq"]) + 1 :])
    assert sorted(frame["content"] for frame in frames[:-1]) == sorted(f"message {n}" for n in range(3000))


async def test_reconnect_with_after_seq_sees_every_seq_exactly_once(server: RunningServer) -> None:
    conversation = await new_conversation(server)
    producing = asyncio.create_task(produce(server, conversation, 1500))
    seen: list[dict] = []
    last = 0
    for _ in range(4):  # drop the connection three times while events keep coming
        async with open_socket(server, conversation, resend_mode="since", after_seq=last) as ws:
            await next_frame(ws)
            for _ in range(200):
                frame = await next_frame(ws)
                seen.append(frame)
                last = frame["seq"]
    await producing
    async with open_socket(server, conversation, after_seq=last) as ws:
        await next_frame(ws)
        final = (await stored_seqs(server, conversation))[-1]
        seen += await read_until_seq(ws, final)
    assert_gapless(seen, await stored_seqs(server, conversation))


async def test_since_without_after_seq_sends_only_new_events(server: RunningServer) -> None:
    conversation = await new_conversation(server)
    await produce(server, conversation, 20)
    async with open_socket(server, conversation, resend_mode="since") as ws:
        state = await next_frame(ws)
        await produce(server, conversation, 5)
        frames = await read_until_seq(ws, state["value"]["last_seq"] + 5)
    assert_gapless(frames, range(state["value"]["last_seq"] + 1, state["value"]["last_seq"] + 6))


async def test_slow_client_is_closed_with_resume_seq(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, ws_queue_size=8)) as server:
        conversation = await new_conversation(server)
        await produce(server, conversation, 5)
        async with open_socket(server, conversation, max_queue=4, compress=False) as ws:
            await next_frame(ws)  # then stop reading, while the agent goes on regardless
            subscription = server.app.state.bus.subscriptions(conversation)[0]
            produced = 0
            while not subscription.overflowed:  # socket buffers full, then the 8-record queue
                assert produced < 20_000, "the server kept sending to a client that reads nothing"
                await produce(server, conversation, 50, noise=32_000)
                produced += 50
            closed = await read_until_closed(ws)
        assert closed.code == CloseCode.TOO_SLOW
        resume = int(closed.reason.rsplit("after_seq=", 1)[1])
        seqs = await stored_seqs(server, conversation)
        assert_gapless(closed.frames, [s for s in seqs if s <= resume])
        assert resume < seqs[-1]
        async with open_socket(server, conversation, after_seq=resume) as ws:
            await next_frame(ws)
            rest = await read_until_seq(ws, seqs[-1])
        assert_gapless(rest, [s for s in seqs if s > resume])


# -- inbound frames -------------------------------------------------------------------------


async def test_malformed_inbound_frames_get_error_frames_and_the_socket_stays_open(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, max_body_bytes=2_000)) as server:
        conversation = await new_conversation(server)
        last = (await stored_seqs(server, conversation))[-1]
        async with open_socket(server, conversation) as ws:
            await next_frame(ws)
            await read_until_seq(ws, last)
            errors = []
            for bad in ["not json", "[1, 2]", '{"type": "dance"}', '{"type": "message", "content": 5}',
                        '{"content": "hi", "run": "yes"}', "[" * 1_999, '{"content": "\\ud800"}']:
                await ws.send(bad)
                errors.append(await next_frame(ws))
            await ws.send(json.dumps({"type": "message", "content": "still here?", "run": False}))
            await ws.send(json.dumps({"role": "user", "content": "and the REST shape", "run": False}))
            echoed = [await next_frame(ws), await next_frame(ws)]
    assert [e["type"] for e in errors] == ["error"] * 7
    assert [e["code"] for e in errors] == [
        "invalid_json", "invalid_frame", "invalid_frame", "invalid_frame", "invalid_frame", "invalid_json",
        "invalid_frame",
    ]
    assert all(e["detail"] for e in errors)
    assert [(e["kind"], e["role"], e["content"]) for e in echoed] == [
        ("MessageEvent", "user", "still here?"),
        ("MessageEvent", "user", "and the REST shape"),
    ]


# -- views ---------------------------------------------------------------------------------


async def test_views_follow_forwarding_and_filters(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        conversation = await new_conversation(server)
        host = await server.runtime.host(conversation)
        first = await host.start_subagent("call-a", subagent_type="general-purpose", description="a")
        deeper = await first.start_subagent("call-b", subagent_type="general-purpose", description="b")
        other = await host.start_subagent("call-c", subagent_type="general-purpose", description="c")
        for target in (first, deeper, other):
            await server.runtime.emit(target.conversation_id, MessageEvent(content="working"))
        await server.runtime.emit(conversation, ObservationEvent(tool_name="t", tool_call_id="x", status="cancelled"))

        async def view(mark_in: str, on: str = conversation, **params: str) -> list[dict]:
            """The frames of a socket on ``on`` up to a live mark emitted in ``mark_in``."""
            async with open_socket(server, on, **params) as ws:
                await next_frame(ws)
                await server.runtime.emit(mark_in, MessageEvent(content="mark"))
                return await read_until_seq(ws, await server.app.state.store.last_seq(conversation))

        everything = await view(conversation)
        assert_gapless(everything, await stored_seqs(server, conversation, include_subagents="true"))
        ids = {first.conversation_id, deeper.conversation_id, other.conversation_id}
        assert streams_of(everything) == {None, *ids}

        own = await view(conversation, subagents="none")
        assert_gapless(own, await stored_seqs(server, conversation))

        narrowed = await view(deeper.conversation_id, parent_tool_use_id="call-a")
        assert_gapless(narrowed, await stored_seqs(server, conversation, parent_tool_use_id="call-a"))
        assert streams_of(narrowed) == {first.conversation_id, deeper.conversation_id}

        scoped = await view(deeper.conversation_id, on=first.conversation_id)
        assert_gapless(scoped, await stored_seqs(server, first.conversation_id, include_subagents="true"))

        old = await view(conversation, event_schema="1", subagents="none")
        assert [f.get("status") for f in old if f["kind"] == "ObservationEvent"] == ["failed"]
        assert [f.get("status") for f in own if f["kind"] == "ObservationEvent"] == ["cancelled"]


async def test_forwarding_off_socket_sees_only_the_root_stream(server: RunningServer) -> None:
    conversation = await new_conversation(server)
    host = await server.runtime.host(conversation)
    child = await host.start_subagent("call-a", subagent_type="general-purpose", description="a")
    async with open_socket(server, conversation) as ws:
        await next_frame(ws)
        await server.runtime.emit(child.conversation_id, MessageEvent(content="hidden"))
        await server.runtime.emit(conversation, MessageEvent(content="visible"))
        root_seqs = await stored_seqs(server, conversation)
        frames = await read_until_seq(ws, root_seqs[-1])
    assert_gapless(frames, root_seqs)
    assert streams_of(frames) == {None}


async def test_forwarding_off_socket_on_a_sub_agent_follows_its_stream_live(server: RunningServer) -> None:
    # Sub-agent events are not on the bus with forwarding off: this socket reads the store.
    conversation = await new_conversation(server)
    host = await server.runtime.host(conversation)
    child = await host.start_subagent("call-a", subagent_type="general-purpose", description="a")
    await server.runtime.emit(child.conversation_id, MessageEvent(content="before"))
    async with open_socket(server, child.conversation_id) as ws:
        await next_frame(ws)
        for n in range(150):  # more than a page, interleaved with the root's own events
            await server.runtime.emit(child.conversation_id, MessageEvent(content=f"live {n}"), wait=n % 2 == 0)
            await server.runtime.emit(conversation, MessageEvent(content=f"root {n}"))
        child_seqs = await stored_seqs(server, child.conversation_id)
        frames = await read_until_seq(ws, child_seqs[-1])
    assert_gapless(frames, child_seqs)
    assert streams_of(frames) == {child.conversation_id}
    assert all(f["parent_tool_use_id"] == "call-a" for f in frames)
    assert [f.get("content") for f in frames][-1] == "live 149"
