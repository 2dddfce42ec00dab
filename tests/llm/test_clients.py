"""Both HTTP clients (OpenAI and Anthropic dialects) against ``mock-llm`` over real HTTP."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from taskwire.errors import LLMError
from taskwire.llm.base import ChatMessage, LLMRequest, ToolCall, ToolSpec
from taskwire.llm.retry import RetryPolicy
from taskwire.llm.sse import encode_body
from taskwire.llm.transport import ModelHTTP
from tests.llm.conftest import http_client, serve_mock
from tests.servers import serve_app

DIALECTS = ["openai", "anthropic"]
NO_RETRY = RetryPolicy(max_retries=0)
"""For tests of how one failed attempt reads (``tests/llm/test_retries.py`` retries)."""
PREFIX = {"openai": "call", "anthropic": "toolu"}
TOOLS = [
    ToolSpec(name="terminal", description="Run a command.",
             parameters={"type": "object", "properties": {"command": {"type": "string"}}}),
    ToolSpec(name="task", description="Run a sub-agent.",
             parameters={"type": "object", "properties": {"prompt": {"type": "string"}}}),
]


def ask(prompt: str, *history: ChatMessage, system: str = "You are a test agent.") -> LLMRequest:
    return LLMRequest(model="scripted", system=system,
                      messages=[ChatMessage(role="user", content=prompt), *history], tools=TOOLS)


def one_lane(*turns: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"lanes": [{"name": "main", "turns": list(turns)}], **spec}


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_text_streams_through_on_delta_and_usage_is_reported(dialect: str, tmp_path: Path) -> None:
    script = one_lane({"text": "alpha beta gamma delta epsilon",
                       "usage": {"input_tokens": 11, "output_tokens": 5, "cache_read_tokens": 2}})
    async with serve_mock(script, tmp_path / "log.jsonl") as mock:
        llm = mock.client(dialect)
        chunks: list[str] = []

        async def on_delta(fragment: str) -> None:
            chunks.append(fragment)

        response = await llm.complete(ask("hi"), on_delta)
        await llm.aclose()
    assert len(chunks) > 1
    assert "".join(chunks) == response.text == "alpha beta gamma delta epsilon"
    assert response.tool_calls == []
    assert response.usage.model_dump() == {
        "input_tokens": 11, "output_tokens": 5, "cache_read_tokens": 2, "cache_write_tokens": 0, "llm_calls": 1,
        "cost_usd": None, "unpriced_calls": 0,
    }
    assert response.stop_reason in ("stop", "end_turn")
    assert response.id


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_parallel_tool_calls_are_assembled_from_streamed_fragments(dialect: str, tmp_path: Path) -> None:
    arguments_a = {"prompt": "Do A — with ünïcode and \"quotes\"", "nested": {"list": [1, 2, {"x": None}]}}
    arguments_b = {"prompt": "Do B"}
    script = one_lane({"text": "Two at once.", "tool_calls": [
        {"name": "task", "arguments": arguments_a},
        {"name": "task", "arguments": arguments_b},
    ]})
    async with serve_mock(script, tmp_path / "log.jsonl") as mock:
        llm = mock.client(dialect)
        response = await llm.complete(ask("go"))
        await llm.aclose()
    prefix = PREFIX[dialect]
    assert response.text == "Two at once."
    assert response.tool_calls == [
        ToolCall(id=f"{prefix}_main_0_0", name="task", arguments=arguments_a),
        ToolCall(id=f"{prefix}_main_0_1", name="task", arguments=arguments_b),
    ]
    assert response.stop_reason in ("tool_calls", "tool_use")


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_sub_agent_lanes_interleave_over_http(dialect: str, tmp_path: Path) -> None:
    script = {"lanes": [
        {"name": "sub-a", "match": {"first_user_ends_with": "job A"},
         "turns": [{"text": "A0", "delay": 0.2}, {"text": "A1"}]},
        {"name": "sub-b", "match": {"first_user_ends_with": "job B"}, "turns": [{"text": "B0"}, {"text": "B1"}]},
        {"name": "main", "turns": [{"text": "M0"}, {"text": "M1"}]},
    ]}
    said = ChatMessage(role="assistant", content="earlier")
    async with serve_mock(script, tmp_path / "log.jsonl") as mock:
        llm = mock.client(dialect)
        answers = await asyncio.gather(
            llm.complete(ask("job A")),
            llm.complete(ask("job B")),
            llm.complete(ask("job B", said, ChatMessage(role="user", content="go on"))),
            llm.complete(ask("Start")),
            llm.complete(ask("job A", said, ChatMessage(role="user", content="go on"))),
            llm.complete(ask("Start", said, ChatMessage(role="user", content="go on"))),
        )
        await llm.aclose()
        assert mock.script.unused_steps() == []
    assert [a.text for a in answers] == ["A0", "B0", "B1", "M0", "A1", "M1"]


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_error_turn_becomes_llm_error_with_status_and_reason(dialect: str, tmp_path: Path) -> None:
    async with serve_mock(one_lane({"error": "the model is overloaded"}), tmp_path / "log.jsonl") as mock:
        llm = mock.client(dialect, retry=NO_RETRY)
        with pytest.raises(LLMError) as caught:
            await llm.complete(ask("hi"))
        await llm.aclose()
    assert "HTTP 500" in caught.value.detail
    assert "the model is overloaded" in caught.value.detail


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_exhausted_strict_script_becomes_llm_error_naming_lane_and_turn(dialect: str, tmp_path: Path) -> None:
    async with serve_mock({**one_lane({"text": "only answer"}), "strict": True}, tmp_path / "log.jsonl") as mock:
        llm = mock.client(dialect)
        await llm.complete(ask("hi"))
        with pytest.raises(LLMError, match="HTTP 400.*script exhausted for lane main at turn 1"):
            await llm.complete(ask("hi", ChatMessage(role="assistant", content="only answer"),
                                   ChatMessage(role="user", content="and?")))
        await llm.aclose()
        assert mock.script.failures == ["script exhausted for lane main at turn 1"]


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_identical_requests_are_byte_identical_and_logged_as_sent(dialect: str, tmp_path: Path) -> None:
    history = [
        ChatMessage(role="assistant", content="Running both.", tool_calls=[
            ToolCall(id="c1", name="terminal", arguments={"command": "echo 1", "timeout": 5}),
            ToolCall(id="c2", name="terminal", arguments={"timeout": 5, "command": "echo 2"}),
        ]),
        ChatMessage(role="tool", tool_call_id="c1", name="terminal", content="1"),
        ChatMessage(role="tool", tool_call_id="c2", name="terminal", content="exit 1", is_error=True),
    ]
    request = ask("Run two commands — ünïcode", *history)
    script = {"lanes": [{"name": "main", "turns": [{"text": "a"}, {"text": "done"}]}]}
    async with serve_mock(script, tmp_path / "log.jsonl") as mock:
        first, second = mock.client(dialect), mock.client(dialect)
        await first.complete(request)
        await second.complete(request.model_copy(deep=True))
        expected = encode_body(first.request_body(request)).decode("utf-8")  # type: ignore[attr-defined]
        await first.aclose()
        await second.aclose()
        logged = mock.requests()
    assert [entry["body"] for entry in logged] == [expected, expected]
    assert [(entry["lane"], entry["turn"]) for entry in logged] == [("main", 1), ("main", 1)]


async def test_anthropic_body_puts_consecutive_tool_results_in_one_user_message(tmp_path: Path) -> None:
    history = [
        ChatMessage(role="assistant", tool_calls=[ToolCall(id="t1", name="terminal", arguments={}),
                                                  ToolCall(id="t2", name="terminal", arguments={})]),
        ChatMessage(role="tool", tool_call_id="t1", content="one"),
        ChatMessage(role="tool", tool_call_id="t2", content="boom", is_error=True),
    ]
    async with serve_mock(one_lane({"text": "x"}, {"text": "y"}), tmp_path / "log.jsonl") as mock:
        llm = mock.client("anthropic")
        await llm.complete(ask("go", *history, system="Be brief."))
        await llm.aclose()
        body = json.loads(mock.requests()[0]["body"])
    assert body["system"] == "Be brief."
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "one"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "boom", "is_error": True},
    ]
    assert body["tools"][0] == {"name": "terminal", "description": "Run a command.",
                                "input_schema": TOOLS[0].parameters}
    assert body["stream"] is True


async def test_openai_body_asks_for_streamed_usage_and_carries_tool_calls(tmp_path: Path) -> None:
    history = [
        ChatMessage(role="assistant", tool_calls=[ToolCall(id="c1", name="terminal", arguments={"command": "ls"})]),
        ChatMessage(role="tool", tool_call_id="c1", content="file"),
    ]
    async with serve_mock(one_lane({"text": "x"}, {"text": "y"}), tmp_path / "log.jsonl") as mock:
        llm = mock.client("openai")
        await llm.complete(ask("go", *history, system="Be brief."))
        await llm.aclose()
        body = json.loads(mock.requests()[0]["body"])
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["messages"][2] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command":"ls"}'}}
    ]}
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "c1", "content": "file"}
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_unreachable_server_is_llm_error(dialect: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = http_client(dialect, f"http://127.0.0.1:{port}", retry=NO_RETRY)
    with pytest.raises(LLMError, match="failed: ClientConnectorError"):
        await llm.complete(ask("hi"))
    await llm.aclose()


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_slow_answer_past_the_stall_timeout_is_llm_error(dialect: str, tmp_path: Path) -> None:
    async with serve_mock(one_lane({"text": "late", "delay": 5}), tmp_path / "log.jsonl") as mock:
        llm = mock.client(dialect, stall_timeout=0.2, retry=NO_RETRY)
        with pytest.raises(LLMError, match="stalled: no data for 0.2 s"):
            await llm.complete(ask("hi"))
        await llm.aclose()


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_models_sharing_the_servers_client_keep_their_own_timeout_and_leave_it_open(
    dialect: str, tmp_path: Path
) -> None:
    shared = ModelHTTP()
    try:
        async with serve_mock(one_lane({"text": "late", "delay": 1}), tmp_path / "log.jsonl") as mock:
            hasty = mock.client(dialect, stall_timeout=0.2, http=shared, retry=NO_RETRY)
            patient = mock.client(dialect, http=shared)
            with pytest.raises(LLMError, match="stalled"):
                await hasty.complete(ask("hi"))
            await hasty.aclose()  # a model closing leaves the server's client to the others
            assert not shared.is_closed
            assert (await patient.complete(ask("hi"))).text == "late"
            await patient.aclose()
            assert not shared.is_closed
    finally:
        await shared.aclose()


BROKEN_STREAMS = {
    "openai": {
        "truncated": ['data: {"id":"x","choices":[{"index":0,"delta":{"content":"hel"}}]}\n\n'],
        "not json": ["data: {oops\n\n"],
        "bad arguments": [
            'data: {"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c",'
            '"function":{"name":"t","arguments":"{\\"a\\":"}}]},"finish_reason":"tool_calls"}]}\n\n',
            "data: [DONE]\n\n",
        ],
        "error event": ['data: {"error":{"message":"upstream exploded"}}\n\n'],
    },
    "anthropic": {
        "truncated": [
            'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":{}}}\n\n',
            'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
            '"content_block":{"type":"text","text":""}}\n\n',
        ],
        "not json": ["event: message_start\ndata: {oops\n\n"],
        "bad arguments": [
            'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":{}}}\n\n',
            'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
            '"content_block":{"type":"tool_use","id":"t","name":"t","input":{}}}\n\n',
            'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
            '"delta":{"type":"input_json_delta","partial_json":"[1,"}}\n\n',
            'event: message_stop\ndata: {"type":"message_stop"}\n\n',
        ],
        "error event": [
            'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
            '"message":"upstream exploded"}}\n\n'
        ],
    },
}
REASONS = {
    "truncated": "broke off before",
    "not json": "not JSON",
    "bad arguments": "arguments of tool 't'",
    "error event": "upstream exploded",
}


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("kind", sorted(REASONS))
async def test_malformed_stream_is_llm_error_with_a_readable_reason(dialect: str, kind: str) -> None:
    frames = BROKEN_STREAMS[dialect][kind]

    async def broken(request: Request) -> Response:
        async def body() -> Any:
            for frame in frames:
                yield frame.encode()

        return StreamingResponse(body(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/messages", broken, methods=["POST"]),
                            Route("/v1/chat/completions", broken, methods=["POST"])])
    async with serve_app(app) as url:
        llm = http_client(dialect, url, retry=NO_RETRY)
        with pytest.raises(LLMError) as caught:
            await llm.complete(ask("hi"))
        await llm.aclose()
    assert REASONS[kind] in caught.value.detail


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_non_json_error_answer_keeps_the_servers_text(dialect: str) -> None:
    async def refuse(request: Request) -> Response:
        return Response("gateway says no", status_code=502)

    app = Starlette(routes=[Route("/v1/messages", refuse, methods=["POST"]),
                            Route("/v1/chat/completions", refuse, methods=["POST"])])
    async with serve_app(app) as url:
        llm = http_client(dialect, url, retry=NO_RETRY)
        with pytest.raises(LLMError, match="HTTP 502: gateway says no"):
            await llm.complete(ask("hi"))
        await llm.aclose()


ANSWERS = {
    "openai": [
        'data: {"id":"x","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n',
        'data: {"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
        "data: [DONE]\n\n",
    ],
    "anthropic": [
        'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":{}}}\n\n',
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        '"content_block":{"type":"text","text":""}}\n\n',
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        '"delta":{"type":"text_delta","text":"hi"}}\n\n',
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{}}\n\n',
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ],
}


def answering_app(frames: list[str], seen_ports: list[int], then: Any = None) -> Starlette:
    """A model that answers ``frames`` (then, if given, whatever ``then()`` yields), noting the
    client port of every call (one port: one connection, reused)."""

    async def answer(request: Request) -> Response:
        seen_ports.append(request.scope["client"][1])

        async def body() -> Any:
            for frame in frames:
                yield frame.encode()
            if then is not None:
                async for more in then():
                    yield more

        return StreamingResponse(body(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/messages", answer, methods=["POST"]),
                             Route("/v1/chat/completions", answer, methods=["POST"])])


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_calls_one_after_another_reuse_one_connection(dialect: str) -> None:
    # An answer read only to its end marker left its response unread and closed the connection:
    # every call opened a new one (a TLS handshake each, against a real provider).
    ports: list[int] = []
    async with serve_app(answering_app(ANSWERS[dialect], ports)) as url:
        llm = http_client(dialect, url)
        for _ in range(3):
            assert (await llm.complete(ask("hi"))).text == "hi"
        await llm.aclose()
    assert len(ports) == 3 and len(set(ports)) == 1


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_a_server_streaming_on_past_the_answers_end_is_cut_off(dialect: str) -> None:
    async def forever() -> Any:
        while True:
            yield b": keep-alive\n\ndata: {}\n\n"
            await asyncio.sleep(0.001)

    ports: list[int] = []
    async with serve_app(answering_app(ANSWERS[dialect], ports, then=forever)) as url:
        llm = http_client(dialect, url, timeout=30)
        assert (await asyncio.wait_for(llm.complete(ask("hi")), 60)).text == "hi"
        await llm.aclose()
