"""Where a Claude Code session's SDK messages come from: the real CLI through ``ClaudeSDKClient``.

``MessageSource`` is the small interface the backend drives; ``ClaudeCodeSession`` is the real
one and ``replay.ReplaySession`` plays a recorded transcript. The SDK's errors are translated
into ``ClaudeSDKError`` here, once.
"""

from __future__ import annotations

import logging
from collections import deque
from contextlib import aclosing
from pathlib import Path
from typing import Any, AsyncIterator, Protocol

import claude_agent_sdk as sdk

from .transport import OwnGroupTransport
from ..environment import blanked_settings
from ..errors import ClaudeSDKError
from ..specs import ClaudeSDKAgentSpec

log = logging.getLogger(__name__)


class MessageSource(Protocol):
    """A Claude Code session as the backend drives it."""

    async def connect(self) -> None:
        """Start the session; raises ``ClaudeSDKError`` when it cannot."""
        ...

    async def query(self, text: str, prompt_id: str) -> None:
        """Send a user prompt whose ``uuid`` is ``prompt_id`` (the result that answers it names it)."""
        ...

    def receive(self) -> AsyncIterator[Any]:
        """Every SDK message of the session, in order, until it ends."""
        ...

    async def interrupt(self) -> None:
        """Ask Claude Code to stop the turn in progress."""
        ...

    async def stop_task(self, task_id: str) -> None:
        """Ask Claude Code to stop one of its tasks (a sub-agent); it reports the end itself."""
        ...

    async def close(self) -> None:
        """End the session and its process. Idempotent."""
        ...


def claude_options(
    spec: ClaudeSDKAgentSpec, cwd: Path, stderr: Any = None, can_use_tool: Any = None
) -> sdk.ClaudeAgentOptions:
    """The SDK options for ``spec``: partial messages on, so text and calls stream live;
    ``can_use_tool``: the permission callback (``None``: Claude Code decides alone)."""
    system_prompt: Any = spec.system_prompt if spec.system_prompt is not None else {
        "type": "preset", "preset": "claude_code",
    }
    return sdk.ClaudeAgentOptions(
        model=spec.model,
        permission_mode=spec.permission_mode,
        allowed_tools=list(spec.allowed_tools or []),
        cli_path=spec.cli_path,
        env=blanked_settings(spec.env),  # the SDK adds it to the server's whole environment
        system_prompt=system_prompt,
        max_turns=spec.max_turns,
        cwd=str(cwd),
        include_partial_messages=True,
        forward_subagent_text=spec.subagent_text,
        stderr=stderr,
        can_use_tool=can_use_tool,
    )


class ClaudeCodeSession:
    """The real Claude Code CLI, one process per session."""

    def __init__(self, options: sdk.ClaudeAgentOptions) -> None:
        self._stderr: deque[str] = deque(maxlen=20)
        options.stderr = self._on_stderr
        self._client = sdk.ClaudeSDKClient(options, transport=OwnGroupTransport(options))
        self._connected = False

    def _on_stderr(self, line: str) -> None:
        self._stderr.append(line)
        log.debug("claude: %s", line)

    def _failure(self, what: str, exc: BaseException) -> ClaudeSDKError:
        tail = "\n".join(self._stderr)
        detail = f"{what}: {exc}" + (f"\n{tail}" if tail else "")
        code = "claude_cli_not_found" if isinstance(exc, sdk.CLINotFoundError) else "claude_sdk_error"
        return ClaudeSDKError(detail, code=code)

    async def connect(self) -> None:
        try:
            await self._client.connect()
        except (sdk.ClaudeSDKError, OSError) as exc:
            raise self._failure("Claude Code did not start", exc) from exc
        self._connected = True

    async def query(self, text: str, prompt_id: str) -> None:
        async def prompt() -> AsyncIterator[dict[str, Any]]:
            yield {
                "type": "user",
                "message": {"role": "user", "content": text},
                "parent_tool_use_id": None,
                "uuid": prompt_id,
            }

        try:
            await self._client.query(prompt())
        except (sdk.ClaudeSDKError, OSError) as exc:
            raise self._failure("cannot send the prompt to Claude Code", exc) from exc

    async def receive(self) -> AsyncIterator[Any]:
        try:
            async with aclosing(self._client.receive_messages()) as messages:
                async for message in messages:
                    yield message
        except Exception as exc:  # the SDK raises a bare Exception for an error frame
            if isinstance(exc, ClaudeSDKError):
                raise
            raise self._failure("Claude Code failed", exc) from exc

    async def interrupt(self) -> None:
        try:
            await self._client.interrupt()
        except (sdk.ClaudeSDKError, OSError) as exc:
            raise self._failure("cannot interrupt Claude Code", exc) from exc

    async def stop_task(self, task_id: str) -> None:
        try:
            await self._client.stop_task(task_id)
        except (sdk.ClaudeSDKError, OSError) as exc:
            raise self._failure(f"cannot stop Claude Code task {task_id!r}", exc) from exc

    async def close(self) -> None:
        if self._connected:
            self._connected = False
            await self._client.disconnect()
