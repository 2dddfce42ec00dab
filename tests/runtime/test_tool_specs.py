"""The tools' specs as models are told about them: made once per tool and shared by every
agent, so nothing that sends them may change them."""

from __future__ import annotations

import copy
from pathlib import Path

from taskwire.llm.base import ChatMessage, LLMRequest
from taskwire.llm.scripted import ScriptedLLM
from taskwire.runtime.tools import BUILTIN_TOOLS, spec_of
from tests.llm.conftest import serve_mock


def test_each_tool_has_one_spec_without_titles() -> None:
    for tool in BUILTIN_TOOLS.values():
        spec = spec_of(tool)
        assert spec is spec_of(tool())  # the class's, whichever agent's instance asks
        assert (spec.name, spec.description) == (tool.name, tool.description)
        assert "title" not in spec.parameters
        assert all("title" not in p for p in spec.parameters.get("properties", {}).values())


async def test_sending_a_request_leaves_the_shared_specs_as_they_were(tmp_path: Path) -> None:
    specs = [spec_of(tool) for tool in BUILTIN_TOOLS.values()]
    before = copy.deepcopy([s.model_dump() for s in specs])
    request = LLMRequest(model="scripted", messages=[ChatMessage(role="user", content="hi")], tools=specs)
    script = {"lanes": [{"name": "main", "repeat": True, "turns": [{"text": "ok"}]}]}
    async with serve_mock(script, tmp_path / "log.jsonl") as mock:
        for dialect in ("openai", "anthropic"):
            llm = mock.client(dialect)
            assert (await llm.complete(request)).text == "ok"
            await llm.aclose()
    assert (await ScriptedLLM(script).complete(request)).text == "ok"
    assert [s.model_dump() for s in specs] == before
