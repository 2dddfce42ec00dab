"""``task``: delegate work to a sub-agent; the observation is its final answer."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from .base import ToolContext, ToolResult


class TaskTool:
    name: ClassVar[str] = "task"
    description: ClassVar[str] = (
        "Delegate a self-contained piece of work to a sub-agent. It starts fresh with `prompt` "
        "as its only message and returns its final answer. Several task calls in one response "
        "run in parallel."
    )

    class Arguments(BaseModel):
        description: str = Field(description="A short (3-5 word) description of the task.")
        prompt: str = Field(description="Everything the sub-agent needs to know to do the work.")
        subagent_type: str = Field(default="general-purpose", description="Which kind of sub-agent.")

    async def run(self, ctx: ToolContext, args: Arguments) -> ToolResult:
        # The spawning call's id comes from the context: the sub-agent's events are stamped with it.
        return await ctx.tasks.run_task(
            ctx.host,
            ctx.tool_call_id,
            description=args.description,
            prompt=args.prompt,
            subagent_type=args.subagent_type,
        )
