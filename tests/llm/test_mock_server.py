"""``mock-llm`` on the wire: both dialects as raw HTTP, the request log, and its refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.llm.conftest import serve_mock

SCRIPT = {"lanes": [{"name": "main", "turns": [
    {"text": "Running it.", "tool_calls": [{"name": "Bash", "arguments": {"command": "echo hi"}}]},
    {"text": "Done."},
]}]}
ANTHROPIC_BODY = {"model": "claude-test", "max_tokens": 100, "stream": True,
                  "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
OPENAI_BODY = {"model": "gpt-test", "stream": True, "stream_options": {"include_usage": True},
               "messages": [{"role": "user", "content": "hi"}]}


def sse_events(text: str) -> list[tuple[str | None, Any]]:
    events = []
    for frame in text.strip().split("\n\n"):
        name = None
        data = None
        for line in frame.splitlines():
            if line.startswith("event: "):
                name = line[len("event: "):]
            elif line.startswith("data: "):
                payload = line[len("data: "):]
                data = payload if payload == "[DONE]" else json.loads(payload)
        events.append((name, data))
    return events


async def test_anthropic_stream_follows_the_apis_event_sequence(tmp_path: Path) -> None:
    async with serve_mock(SCRIPT, tmp_path / "log.jsonl") as mock, httpx.AsyncClient() as http:
        response = await http.post(f"{mock.url}/v1/messages?beta=true", json=ANTHROPIC_BODY)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse_events(response.text)
    names = [name for name, _ in events]
    assert names == [
        "message_start",
        "content_block_start", "ping", "content_block_delta", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_delta", "content_block_delta",
        "content_block_stop",
        "message_delta", "message_stop",
    ]
    assert all(data["type"] == name for name, data in events)
    start = events[0][1]["message"]
    assert (start["id"], start["model"], start["role"]) == ("msg_main_0", "claude-test", "assistant")
    tool = events[6][1]["content_block"]
    assert tool == {"type": "tool_use", "id": "toolu_main_0_0", "name": "Bash", "input": {}}
    partial = "".join(data["delta"]["partial_json"] for _, data in events[7:10])
    assert json.loads(partial) == {"command": "echo hi"}
    assert events[11][1]["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert events[11][1]["usage"]["output_tokens"] >= 1


async def test_anthropic_answers_without_streaming_too(tmp_path: Path) -> None:
    async with serve_mock(SCRIPT, tmp_path / "log.jsonl") as mock, httpx.AsyncClient() as http:
        response = await http.post(f"{mock.url}/v1/messages", json={**ANTHROPIC_BODY, "stream": False})
    message = response.json()
    assert message["content"] == [
        {"type": "text", "text": "Running it."},
        {"type": "tool_use", "id": "toolu_main_0_0", "name": "Bash", "input": {"command": "echo hi"}},
    ]
    assert message["stop_reason"] == "tool_use"


async def test_openai_stream_has_fragments_finish_reason_usage_and_done(tmp_path: Path) -> None:
    async with serve_mock(SCRIPT, tmp_path / "log.jsonl") as mock, httpx.AsyncClient() as http:
        response = await http.post(f"{mock.url}/v1/chat/completions", json=OPENAI_BODY)
    events = sse_events(response.text)
    assert events[-1] == (None, "[DONE]")
    chunks = [data for _, data in events[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] >= 1
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks[:-1])
    assert text == "Running it."
    fragments = [part for c in chunks[:-1] for part in c["choices"][0]["delta"].get("tool_calls", [])]
    assert fragments[0]["id"] == "call_main_0_0" and fragments[0]["function"]["name"] == "Bash"
    assert json.loads("".join(f["function"]["arguments"] for f in fragments)) == {"command": "echo hi"}


async def test_openai_answers_without_streaming_too(tmp_path: Path) -> None:
    async with serve_mock(SCRIPT, tmp_path / "log.jsonl") as mock, httpx.AsyncClient() as http:
        response = await http.post(f"{mock.url}/v1/chat/completions", json={**OPENAI_BODY, "stream": False})
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["tool_calls"][0]["function"] == {"name": "Bash", "arguments": '{"command":"echo hi"}'}


async def test_empty_answer_streams_a_message_without_content_blocks(tmp_path: Path) -> None:
    script = {"lanes": [{"name": "quiet", "turns": [{"text": ""}]}]}
    async with serve_mock(script, tmp_path / "log.jsonl") as mock, httpx.AsyncClient() as http:
        response = await http.post(f"{mock.url}/v1/messages", json=ANTHROPIC_BODY)
    names = [name for name, _ in sse_events(response.text)]
    assert names == ["message_start", "ping", "message_delta", "message_stop"]


async def test_request_log_holds_each_body_exactly_as_received(tmp_path: Path) -> None:
    raw = '{"model":"m",  "max_tokens":5,"messages":[{"role":"user","content":"h\\u00e9 ünï"}]}'.encode()
    async with serve_mock(SCRIPT, tmp_path / "log.jsonl") as mock, httpx.AsyncClient() as http:
        await http.post(f"{mock.url}/v1/messages?beta=true", content=raw)
        await http.post(f"{mock.url}/v1/messages", content=b"not json")
        logged = mock.requests()
    assert logged[0]["body"].encode("utf-8") == raw
    assert (logged[0]["path"], logged[0]["query"], logged[0]["lane"], logged[0]["turn"]) == (
        "/v1/messages", "beta=true", "main", 0)
    assert logged[1]["body"] == "not json" and logged[1]["lane"] is None


@pytest.mark.parametrize(
    ("path", "body", "reason"),
    [
        ("/v1/messages", b"{nope", "not valid JSON"),
        ("/v1/messages", b"[]", "must be a JSON object"),
        ("/v1/messages", json.dumps({**ANTHROPIC_BODY, "max_tokens": None}).encode(), "max_tokens"),
        ("/v1/messages", json.dumps({**ANTHROPIC_BODY, "messages": []}).encode(), "messages"),
        ("/v1/messages", json.dumps({**ANTHROPIC_BODY, "messages": [{"role": "robot", "content": "x"}]}).encode(),
         "messages.0.role"),
        ("/v1/chat/completions", json.dumps({"messages": [{"role": "user", "content": "x"}]}).encode(), "model"),
        ("/v1/chat/completions", json.dumps({**OPENAI_BODY, "messages": [{"role": "user", "content": 5}]}).encode(),
         "messages[0].content"),
    ],
)
async def test_malformed_request_is_a_400_with_a_reason(path: str, body: bytes, reason: str, tmp_path: Path) -> None:
    async with serve_mock(SCRIPT, tmp_path / "log.jsonl") as mock, httpx.AsyncClient() as http:
        response = await http.post(f"{mock.url}{path}", content=body)
        assert mock.script.status()["served"] == []
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert reason in error["message"]


async def test_unknown_route_is_a_404_naming_it(tmp_path: Path) -> None:
    async with serve_mock(SCRIPT, tmp_path / "log.jsonl") as mock, httpx.AsyncClient() as http:
        response = await http.post(f"{mock.url}/v1/complete", json={})
    assert response.status_code == 404
    assert "POST /v1/complete" in response.json()["error"]["message"]


async def test_error_turn_answers_with_its_status_in_the_dialects_shape(tmp_path: Path) -> None:
    script = {"lanes": [{"name": "main", "turns": [{"error": "busy", "status": 529}]}]}
    async with serve_mock(script, tmp_path / "log.jsonl") as mock, httpx.AsyncClient() as http:
        anthropic = await http.post(f"{mock.url}/v1/messages", json=ANTHROPIC_BODY)
        openai = await http.post(f"{mock.url}/v1/chat/completions", json=OPENAI_BODY)
    assert anthropic.status_code == openai.status_code == 529
    assert anthropic.json() == {"type": "error", "error": {
        "type": "overloaded_error", "message": "scripted failure (lane main, turn 0): busy"}}
    assert openai.json()["error"]["message"] == "scripted failure (lane main, turn 0): busy"


async def test_script_status_reports_unused_steps_and_failures_of_a_strict_script(tmp_path: Path) -> None:
    later = {**ANTHROPIC_BODY, "messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "a"},
        {"role": "user", "content": "b"}, {"role": "assistant", "content": "c"},
        {"role": "user", "content": "d"},
    ]}
    async with serve_mock({**SCRIPT, "strict": True}, tmp_path / "log.jsonl") as mock, httpx.AsyncClient() as http:
        await http.post(f"{mock.url}/v1/messages", json=ANTHROPIC_BODY)
        refused = await http.post(f"{mock.url}/v1/messages", json=later)
        status = (await http.get(f"{mock.url}/script/status")).json()
    assert refused.status_code == 400
    assert status == {
        "unused": [{"lane": "main", "turn": 1}],
        "failures": ["script exhausted for lane main at turn 2"],
        "unscripted": [],
        "served": [{"lane": "main", "turn": 0, "times": 1}],
    }
