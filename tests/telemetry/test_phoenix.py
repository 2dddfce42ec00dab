"""Traces in a real backend: taskwire exports to Arize Phoenix, the test reads them back.

Skipped where Phoenix is not installed (``make phoenix``); a failure in CI, which installs it.
"""

from __future__ import annotations

import json
import os
import uuid
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import pytest

from taskwire.specs import DEFAULT_SYSTEM_PROMPT
from tests.servers import ServerProcess
from tests.services import need, wait_until
from tests.telemetry.phoenix import PHOENIX, Phoenix
from tests.telemetry.runs import expected_span_count, native_agent, recorded_claude_code, run_to_end, subagents
from tests.telemetry.spans import Span, check_tree


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    need(PHOENIX.exists(), f"arize-phoenix is not installed ({PHOENIX} is missing; `make phoenix` installs it)")
    backend = Phoenix(tmp_path_factory.mktemp("phoenix"))
    backend.start()
    try:
        yield backend
    finally:
        backend.stop()


@pytest.fixture
async def traced(phoenix: Phoenix, tmp_path: Path) -> AsyncIterator[tuple[ServerProcess, str]]:
    """A ``taskwire serve`` exporting to Phoenix, into a project of this test's own."""
    async with serving(phoenix, tmp_path, {}) as served:
        yield served


@pytest.fixture
async def traced_content(phoenix: Phoenix, tmp_path: Path) -> AsyncIterator[tuple[ServerProcess, str]]:
    """The same, with message content captured."""
    async with serving(phoenix, tmp_path, {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}) as served:
        yield served


@asynccontextmanager
async def serving(phoenix: Phoenix, tmp_path: Path, extra: dict[str, str]) -> AsyncIterator[tuple[ServerProcess, str]]:
    project = f"taskwire-{uuid.uuid4().hex[:12]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OH_", "OTEL_"))}
    env.update({
        "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.url,
        "OTEL_SERVICE_NAME": "taskwire-test",
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}",
        "OH_LLM_API": "scripted",
        **extra,
    })
    server = ServerProcess("taskwire", tmp_path, env)
    await server.start()
    try:
        yield server, project
    finally:
        await server.stop()
        await server.client.aclose()


async def spans_of_run(phoenix: Phoenix, server: ServerProcess, project: str, conversation_id: str) -> list[Span]:
    """The run's spans once Phoenix holds all of them."""
    expected = await expected_span_count(server.client, conversation_id)
    found: list[Span] = []

    async def arrived() -> bool:
        nonlocal found
        found = [s for s in await phoenix.spans(project) if s.attributes.get("gen_ai.conversation.id") == conversation_id]
        return len(found) >= expected

    await wait_until(arrived, timeout=120, what=f"{expected} spans in Phoenix")
    assert len(found) == expected
    return found


async def test_phoenix_shows_each_subagent_under_the_task_call_that_spawned_it(
    phoenix: Phoenix, traced: tuple[ServerProcess, str]
) -> None:
    server, project = traced
    conversation_id = await run_to_end(server.client, native_agent())
    entries = await subagents(server.client, conversation_id)
    spans = await spans_of_run(phoenix, server, project, conversation_id)
    agents = check_tree(spans, conversation_id, entries)
    by_id = {s.span_id: s for s in spans}
    (leaf,) = [e for e in entries if e.get("parent_subagent_id")]
    chain = [agents[leaf["subagent_id"]]]
    while chain[-1].parent_id is not None:
        chain.append(by_id[chain[-1].parent_id])
    assert [s.operation for s in chain] == ["invoke_agent", "execute_tool", "invoke_agent", "execute_tool", "invoke_agent"]
    assert chain[1].attributes["gen_ai.tool.call.id"] == leaf["parent_tool_use_id"]
    assert chain[2].attributes["gen_ai.agent.id"] == leaf["parent_subagent_id"]
    assert all(s.attributes["gen_ai.request.model"] == "scripted" for s in spans if s.operation == "chat")


async def test_phoenix_shows_what_each_chat_request_was_given(phoenix: Phoenix, traced_content: tuple[ServerProcess, str]) -> None:
    server, project = traced_content
    conversation_id = await run_to_end(server.client, native_agent(), "Run the demo, please.")
    spans = await spans_of_run(phoenix, server, project, conversation_id)
    chats = sorted((s for s in spans if s.operation == "chat"), key=lambda s: int(s.attributes["taskwire.seq.first"]))
    root_chats = [s for s in chats if "taskwire.subagent_id" not in s.attributes]
    first = json.loads(root_chats[0].attributes["gen_ai.input.messages"])
    assert first == [{"role": "user", "parts": [{"type": "text", "content": "Run the demo, please."}]}]
    later = json.loads(root_chats[1].attributes["gen_ai.input.messages"])
    assert [m["role"] for m in later] == ["user", "assistant", "tool"]  # its own call and result came back to it
    assert later[2]["parts"][0]["type"] == "tool_call_response" and "main-agent" in later[2]["parts"][0]["response"]
    leaf = "Run `echo nested-leaf` with the terminal tool and report what it printed."
    sub_inputs = [json.loads(s.attributes["gen_ai.input.messages"]) for s in chats if "taskwire.subagent_id" in s.attributes]
    assert len(sub_inputs) == 6 and all(m[0]["role"] == "user" for m in sub_inputs)  # A, its leaf, B: two each
    assert any(len(m) == 1 and m[0]["parts"][0]["content"].endswith(leaf) for m in sub_inputs)  # the sub-agent's prompt
    systems = [json.loads(s.attributes["gen_ai.system_instructions"])[0]["content"] for s in chats]
    assert {systems[i] for i, s in enumerate(chats) if s in root_chats} == {DEFAULT_SYSTEM_PROMPT}
    assert all(text and text != DEFAULT_SYSTEM_PROMPT for i, text in enumerate(systems) if chats[i] not in root_chats)


async def test_phoenix_shows_claude_codes_subagents_under_their_agent_calls(
    phoenix: Phoenix, traced: tuple[ServerProcess, str]
) -> None:
    server, project = traced
    conversation_id = await run_to_end(server.client, recorded_claude_code(), "Run echo main-agent, then two sub-agents.")
    entries: list[dict[str, Any]] = await subagents(server.client, conversation_id)
    assert len(entries) == 2
    spans = await spans_of_run(phoenix, server, project, conversation_id)
    agents = check_tree(spans, conversation_id, entries)
    by_id = {s.span_id: s for s in spans}
    for entry in entries:
        calls = [s for s in spans if s.parent_id == agents[entry["subagent_id"]].span_id]
        assert [s.operation for s in calls] == ["execute_tool"]  # the sub-agent's own Bash call
        assert by_id[agents[entry["subagent_id"]].parent_id].name == "execute_tool Task"  # type: ignore[index]
