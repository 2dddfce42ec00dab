"""``think``: a scratchpad; the thought is recorded and nothing happens."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from .base import ToolContext, ToolResult


class ThinkTool:
    name: ClassVar[str] = "think"
    description: ClassVar[str] = "Think out loud. Nothing is run; use it to plan or reflect."

    class Arguments(BaseModel):
        thought: str = Field(description="Your thought.")

    async def run(self, ctx: ToolContext, args: Arguments) -> ToolResult:
        return ToolResult("Your thought has been logged.")
