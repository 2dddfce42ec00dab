"""``terminal``: run a shell command in the workspace, with a timeout and bounded output."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import ClassVar

from pydantic import BaseModel, Field

from server.runtime.tools.base import ToolContext, ToolResult

MAX_OUTPUT = 30_000
"""Characters of output the model sees; the middle of longer output is cut."""


class TerminalTool:
    name: ClassVar[str] = "terminal"
    description: ClassVar[str] = (
        "Run a bash command in the workspace. Returns the exit code and the combined output."
    )

    class Arguments(BaseModel):
        command: str = Field(description="The bash command to run.")
        timeout: float | None = Field(default=None, gt=0, le=3600, description="Seconds (default 120).")

    async def run(self, ctx: ToolContext, args: Arguments) -> ToolResult:
        ctx.workspace.mkdir(parents=True, exist_ok=True)
        proc = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            args.command,
            cwd=ctx.workspace,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # so a timeout or interrupt kills the whole process group
        )
        timeout = args.timeout or 120.0
        try:
            output, _ = await asyncio.wait_for(proc.communicate(), timeout)
        except (asyncio.TimeoutError, asyncio.CancelledError) as exc:
            _kill_group(proc)
            await proc.wait()
            if isinstance(exc, asyncio.CancelledError):
                raise
            return ToolResult(f"Command timed out after {timeout:g} s and was killed.", is_error=True)
        text = bound_output(output.decode("utf-8", errors="replace"))
        code = proc.returncode
        return ToolResult(f"exit code: {code}\n{text}", is_error=code != 0)


def bound_output(text: str, limit: int = MAX_OUTPUT) -> str:
    """Keep the head and tail of long output, saying how much was cut."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters cut ...]\n{text[-half:]}"


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
