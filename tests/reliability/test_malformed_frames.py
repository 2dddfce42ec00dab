"""A thousand malformed frames: each gets an error frame, or (where the frame breaks the
WebSocket protocol itself) a close frame with the protocol's code; the server stays up, logs
no traceback, and serves a normal client after."""

from __future__ import annotations

import json
import random
import struct

from websockets.asyncio.client import connect

from tests.reliability.conftest import KEY, log_problems
from tests.reliability.raw_socket import BINARY, CLOSE, CONTINUATION, TEXT, RawSocket, frame
from tests.servers import ServerProcess

FRAMES = 1_000
HEADERS = {"X-Session-API-Key": KEY}


def malformed(rng: random.Random) -> str | bytes:
    """One frame the socket protocol does not accept, drawn from every kind of mistake."""
    kind = rng.randrange(12)
    if kind == 0:  # garbage text
        return "".join(chr(rng.randrange(32, 0x2FFF)) for _ in range(rng.randrange(1, 200)))
    if kind == 1:  # JSON that is no object
        return rng.choice(["[1, 2]", "42", '"hello"', "null", "true", "[]", "-0.5e3"])
    if kind == 2:  # wrong types
        return json.dumps(rng.choice([{"content": 5}, {"content": None}, {"content": ["a"]}, {"run": "yes", "content": "x"},
                                      {"type": "message", "content": ""}, {"role": "assistant", "content": "x"}]))
    if kind == 3:  # unknown type or field
        return json.dumps(rng.choice([{"type": "dance"}, {"type": 7}, {"content": "x", "extra": 1}, {"type": None}]))
    if kind == 4:  # deep nesting
        depth = rng.randrange(1_000, 50_000)
        return rng.choice(["[" * depth, '{"a":' * depth, "[" * depth + "]" * depth])
    if kind == 5:  # binary garbage
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
    if kind == 6:  # lone surrogates, escaped
        return rng.choice(['{"content": "\\ud800"}', '{"content": "a\\udfffb"}', '{"session_api_key": "\\ud800"}'])
    if kind == 7:  # numbers Python refuses
        return '{"content": "x", "run": ' + "9" * rng.randrange(4_400, 10_000) + "}"
    if kind == 8:  # empty or whitespace
        return rng.choice(["", " ", "\n\t", b""])
    if kind == 9:  # truncated JSON
        text = json.dumps({"type": "message", "content": "cut short"})
        return text[: rng.randrange(1, len(text))]
    if kind == 10:  # binary frame with bytes that are not UTF-8 JSON
        return b"\xff\xfe" + bytes(rng.randrange(256) for _ in range(20))
    return json.dumps({"type": "message", "content": "x", "run": 1.5})  # a float where a bool goes


async def test_a_thousand_malformed_frames_each_get_an_error_frame(served: ServerProcess) -> None:
    conversation = (await served.client.post("/api/conversations", json={"run": False})).json()["id"]
    count_before = (await served.client.get(f"/api/conversations/{conversation}/events/count")).json()
    rng = random.Random(11)
    url = f"{served.ws_url}/sockets/events/{conversation}"
    async with connect(url, additional_headers=HEADERS, max_size=None) as ws:
        assert json.loads(await ws.recv())["key"] == "full_state"
        replay = [json.loads(await ws.recv()) for _ in range(count_before)]
        assert all("seq" in event for event in replay)
        answers = []
        for _ in range(FRAMES):
            await ws.send(malformed(rng))
            answers.append(json.loads(await ws.recv()))
        await ws.send(json.dumps({"content": "still listening?", "run": False}))
        echoed = json.loads(await ws.recv())
    assert {a["type"] for a in answers} == {"error"}
    assert {a["code"] for a in answers} == {"invalid_json", "invalid_frame"}
    assert all(a["detail"] for a in answers)
    assert (echoed["kind"], echoed["content"]) == ("MessageEvent", "still listening?")
    count_after = (await served.client.get(f"/api/conversations/{conversation}/events/count")).json()
    assert count_after == count_before + 1, "no malformed frame became an event"
    await served.stop()
    assert log_problems(served) == []


# What breaks the WebSocket protocol itself ends the socket, with the protocol's close code.
PROTOCOL_BREAKERS = [
    (frame(TEXT, b'{"content": "\xff\xfe"}'), 1007),  # text that is not UTF-8
    (frame(TEXT, b"x", length=2_000_000), 1009),  # over OH_MAX_BODY_BYTES: refused at its header
    (frame(CONTINUATION, b"orphan"), 1002),  # a continuation of nothing
    (frame(TEXT, b"{}", masked=False), 1002),  # clients must mask
    (frame(0x3, b"reserved"), 1002),  # a reserved opcode
    (frame(0x9, b"p" * 200), 1002),  # a ping over 125 bytes
    (frame(CLOSE, struct.pack("!H", 999)), 1002),  # an invalid close code
    (frame(TEXT, b"half", fin=False) + frame(BINARY, b"other"), 1002),  # a new message mid-message
]


async def test_frames_that_break_the_protocol_get_its_close_code(served: ServerProcess) -> None:
    conversation = (await served.client.post("/api/conversations", json={"run": False})).json()["id"]
    path = f"/sockets/events/{conversation}"
    codes = []
    for data, _ in PROTOCOL_BREAKERS:
        ws = await RawSocket.open(served.port, path, HEADERS)
        await ws.read_frame()  # full_state
        await ws.send(data)
        codes.append((await ws.until_closed()).code)
        await ws.close()
    assert codes == [code for _, code in PROTOCOL_BREAKERS]
    async with connect(f"{served.ws_url}{path}", additional_headers=HEADERS) as ws:
        assert json.loads(await ws.recv())["key"] == "full_state"
    await served.stop()
    assert log_problems(served) == []
