"""``finish``: end the run with a final answer."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from .base import ToolContext, ToolResult


class FinishTool:
    name: ClassVar[str] = "finish"
    description: ClassVar[str] = "Finish the task. `message` is your final answer to the user."

    class Arguments(BaseModel):
        message: str = Field(description="The final answer.")

    async def run(self, ctx: ToolContext, args: Arguments) -> ToolResult:
        return ToolResult(args.message, finish=True)
