"""The event socket against hostile input: what a client may send before and after it
authenticates, how many may wait to, and what an unknown path answers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from taskwire.api.serving import PRE_AUTH_MAX_MESSAGE
from taskwire.stream import CloseCode
from tests.api.helpers import create
from tests.api.socket_client import next_frame, open_socket, read_until_closed, read_until_seq, stored_seqs
from tests.servers import RunningServer, isolated_settings, taskwire_server

KEY = "s3cret-key"
MESSAGE_TOO_BIG = 1009


async def new_conversation(server: RunningServer) -> str:
    return (await create(server, run=False))["id"]


async def test_auth_frame_whose_key_holds_a_lone_surrogate_closes_4001(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, session_api_keys=[KEY])) as server:
        conversation = await new_conversation(server)
        for frame in ['{"type": "auth", "session_api_key": "\\ud800"}', "[" * 5_000]:
            async with open_socket(server, conversation, headers={}) as ws:
                await ws.send(frame)
                closed = await read_until_closed(ws)
            assert (closed.code, closed.frames) == (CloseCode.UNAUTHORIZED, [])


async def test_frames_before_auth_are_small_and_the_limit_lifts_with_the_key(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, session_api_keys=[KEY])) as server:
        conversation = await new_conversation(server)
        big = json.dumps({"type": "auth", "session_api_key": "x" * (PRE_AUTH_MAX_MESSAGE * 4)})
        async with open_socket(server, conversation, headers={}) as ws:
            await ws.send(big)
            closed = await read_until_closed(ws)
        assert closed.code == MESSAGE_TOO_BIG
        # The same size from a client that authenticated (here by header) is a message.
        last = (await stored_seqs(server, conversation))[-1]
        async with open_socket(server, conversation) as ws:
            await read_until_seq(ws, last)
            await ws.send(json.dumps({"content": "y" * (PRE_AUTH_MAX_MESSAGE * 4), "run": False}))
            echoed = await next_frame(ws)
        assert (echoed["kind"], len(echoed["content"])) == ("MessageEvent", PRE_AUTH_MAX_MESSAGE * 4)


async def test_frame_over_the_body_limit_closes_1009_and_the_server_serves_on(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, max_body_bytes=50_000)) as server:
        conversation = await new_conversation(server)
        async with open_socket(server, conversation) as ws:
            await next_frame(ws)
            await ws.send(json.dumps({"content": "z" * 60_000}))
            closed = await read_until_closed(ws)
        assert closed.code == MESSAGE_TOO_BIG
        async with open_socket(server, conversation) as ws:
            assert (await next_frame(ws))["key"] == "full_state"


async def test_the_longest_waiting_unauthenticated_socket_makes_room(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, session_api_keys=[KEY], max_unauthenticated_sockets=2)
    async with taskwire_server(settings) as server:
        conversation = await new_conversation(server)
        room = server.app.state.waiting_room
        async with open_socket(server, conversation, headers={}) as oldest:
            async with open_socket(server, conversation, headers={}) as second:
                while len(room) < 2:  # both wait for their auth frame
                    await asyncio.sleep(0.01)
                async with open_socket(server, conversation, headers={}) as newest:
                    closed = await read_until_closed(oldest)
                    assert closed.code == CloseCode.TOO_MANY_SUBSCRIBERS
                    for ws in (second, newest):  # the others still get in
                        await ws.send(json.dumps({"type": "auth", "session_api_key": KEY}))
                        assert (await next_frame(ws))["key"] == "full_state"
        assert len(room) == 0


async def test_with_no_waiting_room_keys_come_only_in_header_or_query(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, session_api_keys=[KEY], max_unauthenticated_sockets=0)
    async with taskwire_server(settings) as server:
        conversation = await new_conversation(server)
        async with open_socket(server, conversation, headers={}) as ws:
            closed = await read_until_closed(ws)
        assert closed.code == CloseCode.UNAUTHORIZED and "header" in closed.reason
        async with open_socket(server, conversation, session_api_key=KEY, headers={}) as ws:
            assert (await next_frame(ws))["key"] == "full_state"


@pytest.mark.parametrize("path", ["/nope", "/sockets/events", "/sockets/events/a/b", "/api/conversations"])
async def test_an_unknown_websocket_path_is_404_not_403(server: RunningServer, path: str) -> None:
    with pytest.raises(InvalidStatus) as refused:
        async with connect(server.ws_url + path):
            pass
    response = refused.value.response
    assert response.status_code == 404
    assert json.loads(response.body)["code"] == "not_found"
