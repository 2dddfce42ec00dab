"""``ScriptedLLM``: the scripted model in process, and the native demo scripts played through it."""

from __future__ import annotations

import asyncio

import pytest

from taskwire.errors import LLMError
from taskwire.llm.base import ChatMessage, LLMRequest, ToolCall, ToolSpec
from taskwire.llm.scripted import ScriptedLLM
from tests.llm.conftest import DEMO

TOOLS = [
    ToolSpec(name=name, description=name, parameters={"type": "object"})
    for name in ("terminal", "file_editor", "task", "think", "finish")
]


def ask(prompt: str, *history: ChatMessage, system: str = "") -> LLMRequest:
    return LLMRequest(
        model="scripted",
        system=system,
        messages=[ChatMessage(role="user", content=prompt), *history],
        tools=TOOLS,
    )


async def test_text_streams_to_on_delta_in_a_few_chunks() -> None:
    llm = ScriptedLLM({"lanes": [{"name": "main", "turns": [{"text": "one two three four five six"}]}]})
    chunks: list[str] = []

    async def on_delta(fragment: str) -> None:
        chunks.append(fragment)

    response = await llm.complete(ask("hi"), on_delta)
    assert 1 < len(chunks) <= 3
    assert "".join(chunks) == response.text == "one two three four five six"
    assert response.stop_reason == "end_turn"
    assert response.usage.llm_calls == 1


async def test_parallel_tool_calls_come_back_in_one_response_with_derived_ids() -> None:
    llm = ScriptedLLM(DEMO / "two_subagents.yaml")
    first = await llm.complete(ask("Run the demo."))
    second = await llm.complete(
        ask(
            "Run the demo.",
            ChatMessage(role="assistant", content=first.text, tool_calls=first.tool_calls),
            ChatMessage(role="tool", tool_call_id="call_main_0_0", name="terminal", content="main-agent"),
        )
    )
    assert [c.name for c in second.tool_calls] == ["task", "task"]
    assert [c.id for c in second.tool_calls] == ["call_main_1_0", "call_main_1_1"]
    assert second.tool_calls[0].arguments["subagent_type"] == "general-purpose"
    assert second.stop_reason == "tool_use"


async def test_error_turn_raises_llm_error_with_the_scripted_reason() -> None:
    llm = ScriptedLLM({"lanes": [{"name": "main", "turns": [{"error": "rate limited"}]}]})
    with pytest.raises(LLMError, match=r"scripted model failed \(lane main, turn 0\): rate limited"):
        await llm.complete(ask("hi"))


async def test_extra_call_to_a_strict_script_raises_and_unused_steps_are_reported() -> None:
    llm = ScriptedLLM("strict: true\n" + (DEMO / "hello.yaml").read_text())
    await llm.complete(ask("hi"))
    assert llm.unused_steps() == [("main", 1)]
    answered = ChatMessage(role="assistant", content="x")
    await llm.complete(ask("hi", answered))
    assert llm.unused_steps() == []
    with pytest.raises(LLMError, match="script exhausted for lane main at turn 2"):
        await llm.complete(ask("hi", answered, ChatMessage(role="user", content="more"), answered))


async def test_delay_turn_still_answers() -> None:
    llm = ScriptedLLM({"lanes": [{"name": "main", "turns": [{"text": "late", "delay": 0.05}]}]})
    assert (await llm.complete(ask("hi"))).text == "late"


# A tiny agent loop, enough to play the native demo scripts end to end: real `echo` commands,
# `task` runs a sub-agent (in parallel when one response holds several), `finish` ends.


async def run_agent(llm: ScriptedLLM, prompt: str, log: list[str]) -> str:
    messages = [ChatMessage(role="user", content=prompt)]
    while True:
        response = await llm.complete(LLMRequest(model="m", messages=messages, tools=TOOLS))
        messages.append(ChatMessage(role="assistant", content=response.text, tool_calls=response.tool_calls))
        if not response.tool_calls:
            return response.text
        for call in response.tool_calls:
            if call.name == "finish":
                return str(call.arguments["message"])
        results = await asyncio.gather(*(run_tool(llm, call, log) for call in response.tool_calls))
        messages += [
            ChatMessage(role="tool", tool_call_id=call.id, name=call.name, content=result)
            for call, result in zip(response.tool_calls, results)
        ]


async def run_tool(llm: ScriptedLLM, call: ToolCall, log: list[str]) -> str:
    if call.name == "task":
        return await run_agent(llm, call.arguments["prompt"], log)
    assert call.name == "terminal"
    process = await asyncio.create_subprocess_shell(
        call.arguments["command"], stdout=asyncio.subprocess.PIPE
    )
    output, _ = await process.communicate()
    log.append(output.decode().strip())
    return output.decode()


@pytest.mark.parametrize(
    ("name", "commands", "answer"),
    [
        ("hello.yaml", ["main-agent"], "Ran `echo main-agent`; it printed main-agent."),
        ("two_subagents.yaml", ["main-agent", "subagent-a", "subagent-b"],
         "Done: main-agent, subagent-a and subagent-b were all echoed."),
        ("nested.yaml", ["nested-leaf"], "The nested sub-agents ran `echo nested-leaf`."),
    ],
)
async def test_native_demo_script_plays_to_the_end_with_no_step_left(
    name: str, commands: list[str], answer: str
) -> None:
    llm = ScriptedLLM(DEMO / name)
    log: list[str] = []
    assert await run_agent(llm, "Run the demo.", log) == answer
    assert sorted(log) == sorted(commands)
    assert llm.unused_steps() == []
    assert llm.script.failures == []

