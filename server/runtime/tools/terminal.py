"""``terminal``: run a shell command in the workspace, with a timeout and bounded output.

The command is a shell on the host, run as the server's user, with only the environment the
operator allows (``OH_TOOL_ENV_ALLOW``; never an ``OH_*`` setting). Its output is read as it
comes: the model sees the head and the tail, and how much was left out between them, and the
server never holds more than that, whatever the command prints.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections import deque
from typing import ClassVar

from pydantic import BaseModel, Field

from ...environment import tool_environment
from .base import ToolContext, ToolResult

MAX_OUTPUT = 30_000
"""Bytes of output the model sees: the first and the last half of it."""

READ_SIZE = 65_536


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
            env=tool_environment(ctx.host.settings.tool_env_allow),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # so a timeout or interrupt kills the whole process group
        )
        timeout = args.timeout or 120.0
        output = BoundedOutput()
        try:
            async with asyncio.timeout(timeout):
                assert proc.stdout is not None
                while chunk := await proc.stdout.read(READ_SIZE):
                    output.feed(chunk)
                await proc.wait()
        except (TimeoutError, asyncio.CancelledError) as exc:
            _kill_group(proc)
            await proc.wait()
            if isinstance(exc, asyncio.CancelledError):
                raise
            return ToolResult(
                f"Command timed out after {timeout:g} s and was killed. Output so far:\n{output.text()}",
                is_error=True,
            )
        code = proc.returncode
        return ToolResult(f"exit code: {code}\n{output.text()}", is_error=code != 0)


class BoundedOutput:
    """A command's output as it streams in, holding at most ``limit`` bytes: the first half
    as it came, the last half as a rolling tail, and the count of what fell between."""

    def __init__(self, limit: int = MAX_OUTPUT) -> None:
        self.half = limit // 2
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_bytes = 0
        self.omitted = 0

    def feed(self, chunk: bytes) -> None:
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_bytes += len(chunk)
        while self.tail_bytes - len(self.tail[0]) >= self.half:  # the oldest piece is not needed
            self.tail_bytes -= len(dropped := self.tail.popleft())
            self.omitted += len(dropped)

    def text(self) -> str:
        tail = b"".join(self.tail)
        cut = len(tail) - self.half
        if cut > 0:
            tail = tail[cut:]
        omitted = self.omitted + max(cut, 0)
        head = self.head.decode("utf-8", errors="replace")
        if not omitted:
            return head + tail.decode("utf-8", errors="replace")
        # A multi-byte character cut at either edge shows as one replacement character.
        unit = "byte" if omitted == 1 else "bytes"
        return f"{head}\n[... {omitted} {unit} omitted ...]\n{tail.decode('utf-8', errors='replace')}"


def bound_output(text: str, limit: int = MAX_OUTPUT) -> str:
    """``text`` cut to its head and tail the way a command's output is."""
    output = BoundedOutput(limit)
    output.feed(text.encode("utf-8", errors="surrogatepass"))
    return output.text()


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
