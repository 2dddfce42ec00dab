"""``OwnGroupTransport``: the Claude Agent SDK's subprocess transport, with Claude Code started
in a process group of its own (``server/child_processes.py``), so a stop signalled to the
server's group reaches the server, which then closes each session in order, and not Claude
Code, which would die mid-turn and end its run in ``error``."""

from __future__ import annotations

import shutil
from dataclasses import replace
from typing import Any, AsyncIterator

import claude_agent_sdk as sdk
from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

from ..child_processes import in_own_group


class OwnGroupTransport(SubprocessCLITransport):
    """The SDK's transport (claude-agent-sdk is pinned: ``_build_command`` is its own), with
    the CLI's command run through ``in_own_group``."""

    def __init__(self, options: sdk.ClaudeAgentOptions) -> None:
        if options.can_use_tool is not None:
            # What ClaudeSDKClient does for its own transport: permission prompts over stdio.
            options = replace(options, permission_prompt_tool_name="stdio")
        super().__init__(prompt=_no_prompt(), options=options)

    def _build_command(self) -> list[str]:
        command = super()._build_command()
        if shutil.which(command[0]) is None:  # said here: the launcher could only print a traceback
            raise sdk.CLINotFoundError(f"Claude Code not found at: {command[0]}")
        return in_own_group(command)


async def _no_prompt() -> AsyncIterator[dict[str, Any]]:
    return
    yield  # an async generator that yields nothing: prompts go through ``query``
