"""An editor that prompts a child session writes to that sub-agent: ``taskwire acp`` hands the
text to ``POST .../subagents/{id}/messages``, the answer comes once the sub-agent has it, and
the sub-agent's next model request carries it (its parent's never does)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from taskwire.llm.mock_server import create_mock_app
from tests.acp_agent.helpers import TASKWIRE_ACP, drive, embedded_env
from tests.api.helpers import all_events
from tests.api.steering import MODEL, SUB_PROMPT, gated_script, user_texts
from tests.servers import RunningServer, isolated_settings, serve_app, taskwire_server

STEER = "Also list the hidden files."
CHILD = {"sessionUpdate": "subagent_update", "title": "Sub"}


async def open_gate_once_steered(server: RunningServer, gate: Path) -> None:
    """The test's side: once the message is in the sub-agent's stream, let its command end."""
    deadline = asyncio.get_running_loop().time() + 120
    while True:
        page = (await server.client.get("/api/conversations/search")).json()["items"]
        for info in page:
            events = await all_events(server, info["id"], include_subagents="true", kind="MessageEvent")
            if any(e.get("content") == STEER and e.get("subagent_id") for e in events):
                gate.touch()
                return
        assert asyncio.get_running_loop().time() < deadline, "the message never reached the sub-agent"
        await asyncio.sleep(0.05)


async def test_an_editor_prompting_a_child_session_steers_that_subagent(tmp_path: Path) -> None:
    gate, log = tmp_path / "gate", tmp_path / "requests.jsonl"
    async with serve_app(create_mock_app(gated_script(gate), log_path=log)) as url:
        agent = {"kind": "native", "llm": {"api": "openai", "model": MODEL, "base_url": f"{url}/v1", "api_key": "k"}}
        steps = [
            {"op": "initialize"},
            {"op": "new", "cwd": str(tmp_path / "project"), "meta": {"taskwire": {"agent": agent}}},
            {"op": "prompt", "text": "Main work.", "background": True},
            {"op": "wait", "match": {"sessionUpdate": "tool_call", "kind": "execute"}},
            {"op": "prompt", "session_of": {"match": CHILD}, "text": STEER},
            {"op": "awaited"},
            {"op": "prompt", "session_of": {"match": CHILD}, "text": "Too late?"},
        ]
        async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
            opener = asyncio.create_task(open_gate_once_steered(server, gate))
            try:
                transcript = await drive(steps, env=embedded_env(tmp_path, "unused"), folder=tmp_path,
                                         command=[*TASKWIRE_ACP, "--url", server.url], subagents=True)
            finally:
                gate.touch()
                opener.cancel()
    assert transcript.sdk_errors == [] and transcript.validated == transcript.raw
    assert transcript.result(4) == {"stopReason": "end_turn"}  # it has the message
    assert transcript.result(5)["stopReason"] == "end_turn"  # the main turn went on to its end
    late = transcript.error(6)
    assert late["code"] == -32602 and late["data"]["code"] == "subagent_not_running"
    bodies = [json.loads(json.loads(line)["body"]) for line in log.read_text().splitlines()]
    sub = [b for b in bodies if user_texts(b)[:1] == [SUB_PROMPT]]
    assert user_texts(sub[1])[-1] == STEER
    assert all(STEER not in json.dumps(b) for b in bodies if user_texts(b)[:1] == ["Main work."])


async def test_a_root_past_its_token_budget_ends_the_prompt_max_tokens(tmp_path: Path) -> None:
    usage = {"input_tokens": 1000, "output_tokens": 100}
    script = {"lanes": [{"name": "main", "turns": [
        {"tool_calls": [{"name": "think", "arguments": {"thought": "one"}}], "usage": usage},
        {"tool_calls": [{"name": "think", "arguments": {"thought": "two"}}], "usage": usage}]}]}
    async with serve_app(create_mock_app(script)) as url:
        agent = {"kind": "native", "llm": {"api": "openai", "model": MODEL, "base_url": f"{url}/v1", "api_key": "k"},
                 "max_tokens": 1500}
        steps = [{"op": "initialize"}, {"op": "new", "cwd": str(tmp_path / "project"), "meta": {"taskwire": {"agent": agent}}},
                 {"op": "prompt", "text": "Go."}]
        transcript = await drive(steps, env=embedded_env(tmp_path, "unused"), folder=tmp_path)
    assert transcript.result(2)["stopReason"] == "max_tokens"
