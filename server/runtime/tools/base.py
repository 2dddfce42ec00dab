"""The tool interface: every tool gets a ``ToolContext`` and its validated arguments."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import BaseModel, ValidationError

from ...errors import ToolError
from ...llm.base import ToolSpec

if TYPE_CHECKING:
    from ..backends.base import AgentHost


class SubagentRunner(Protocol):
    """What the ``task`` tool needs to run a sub-agent (``runtime.task_manager.TaskManager``).

    A protocol here, so tools know nothing of the task manager that uses them."""

    async def run_task(
        self, host: Any, tool_call_id: str, *, description: str, prompt: str, subagent_type: str
    ) -> ToolResult:
        """Run one sub-agent of ``host`` for call ``tool_call_id`` to its end."""
        ...


@dataclass(slots=True)
class ToolContext:
    """What a tool may use while it runs."""

    host: AgentHost
    """The conversation that called the tool (emit events through it)."""
    tool_call_id: str
    """The id the LLM gave this call; the ``task`` tool stamps its sub-agent with it."""
    tasks: SubagentRunner
    """Runs sub-agents for the ``task`` tool."""

    @property
    def workspace(self) -> Path:
        return self.host.workspace


@dataclass(slots=True)
class ToolResult:
    """What the model sees, and whether the run ends."""

    content: str
    is_error: bool = False
    finish: bool = False
    """True for ``finish``: the run ends and ``content`` is the final answer."""


class Tool(Protocol):
    """A tool the native agent can call."""

    name: ClassVar[str]
    description: ClassVar[str]
    Arguments: ClassVar[type[BaseModel]]

    async def run(self, ctx: ToolContext, args: Any) -> ToolResult: ...


def spec_of(tool: Tool) -> ToolSpec:
    """The tool as the model is told about it: one spec per tool (name, description, arguments
    class), shared by every agent given it. Read it, never change it: the LLM clients only
    serialise it (``tests/runtime/test_tool_specs.py`` holds them to that)."""
    return _spec(tool.name, tool.description, tool.Arguments)


@cache
def _spec(name: str, description: str, arguments: type[BaseModel]) -> ToolSpec:
    # Made once: pydantic takes about a millisecond a tool to make a schema, and even a copy
    # of it for each agent was 2 % of the loop with hundreds of sub-agents starting at once.
    schema = arguments.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return ToolSpec(name=name, description=description, parameters=schema)


def parse_arguments(tool: Tool, arguments: dict[str, Any]) -> BaseModel:
    """Validate the model's arguments; a mistake becomes a ``ToolError`` the model can read."""
    try:
        return tool.Arguments.model_validate(arguments)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}" for err in exc.errors()
        )
        raise ToolError(f"invalid arguments for {tool.name}: {problems}") from exc
