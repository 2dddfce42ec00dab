"""The tools' specs as models are told about them: made once per tool, each agent its own copy."""

from __future__ import annotations

from server.runtime.tools import BUILTIN_TOOLS, spec_of


def test_each_spec_is_the_agents_own_copy() -> None:
    for tool in BUILTIN_TOOLS.values():
        first, second = spec_of(tool), spec_of(tool)
        assert first == second
        assert "title" not in first.parameters
        first.parameters.setdefault("properties", {})["changed"] = {"type": "string"}
        assert "changed" not in spec_of(tool).parameters.get("properties", {}), tool.name
