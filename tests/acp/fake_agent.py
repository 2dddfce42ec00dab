"""A small ACP agent for the bridge's tests, written with the package's agent side.

Run as ``python fake_agent.py [--modes] [--crash-on-start] [--never-answer]``. It writes its pid
to ``$FAKE_AGENT_PID_FILE`` (if set) so a test can check the process is gone afterwards. What a
turn does is chosen by the prompt's first word:

- ``subagents``: a main call; Agent call A whose sub-agent's call names its parent from the
  start and writes text; Agent call B whose sub-agent's call names its parent only on progress
  (the start and the last update lack it); then a final message. Reports usage.
- ``hang``: a running main call, an Agent call with a running and a pending sub-agent call,
  then waits for ``session/cancel`` and answers ``cancelled`` without closing anything.
- ``dangling``: ends the turn with a call still ``pending``; ``incomplete``: still ``in_progress``.
- ``crash``: starts a call, then the process dies.
- ``status``: a call ends with ``cancelled``, a status ACP's schema does not have.
- ``permission``: asks permission for a call and reports the answer in its result.
- ``mode``: answers with the session's current mode.
- anything else: answers ``echo: <prompt>``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from acp import Agent, run_agent, start_tool_call, text_block, tool_content, update_agent_message_text, update_tool_call
from acp.schema import (
    AgentCapabilities,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    SessionMode,
    SessionModeState,
    ToolCallProgress,
    ToolCallUpdate,
    Usage,
)

MODES = "--modes" in sys.argv


def parented(update: Any, parent: str) -> Any:
    """``update`` attributed to the Agent call ``parent``, the way claude-agent-acp does it."""
    update.field_meta = {"claudeCode": {"parentToolUseId": parent}}
    return update


class FakeAgent(Agent):
    def __init__(self) -> None:
        self.conn: Any = None
        self.mode = "auto"
        self.cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=protocol_version, agent_capabilities=AgentCapabilities())

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        modes = None
        if MODES:
            available = [SessionMode(id=m, name=m) for m in ("default", "auto", "bypassPermissions")]
            modes = SessionModeState(current_mode_id=self.mode, available_modes=available)
        self.cancelled["s1"] = asyncio.Event()
        return NewSessionResponse(session_id="s1", modes=modes)

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> None:
        self.mode = mode_id

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled[session_id].set()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        text = " ".join(getattr(block, "text", "") for block in prompt).strip()
        self.cancelled[session_id].clear()
        scenario = getattr(self, f"turn_{text.split()[0]}", None) if text else None
        if scenario is None:
            await self.say(session_id, f"echo: {text}")
            return PromptResponse(stop_reason="end_turn")
        return await scenario(session_id)

    async def say(self, session_id: str, text: str) -> None:
        await self.conn.session_update(session_id, update_agent_message_text(text))

    async def send(self, session_id: str, *updates: Any) -> None:
        for update in updates:
            await self.conn.session_update(session_id, update)

    # -- scenarios ------------------------------------------------------------------------

    async def turn_subagents(self, sid: str) -> PromptResponse:
        def agent_call(call_id: str, name: str) -> list[Any]:
            start = start_tool_call(call_id, "Task", kind="think", status="pending", raw_input={})
            start.field_meta = {"claudeCode": {"toolName": "Agent"}}
            described = update_tool_call(
                call_id, title=f"Echo {name}",
                raw_input={"description": f"Echo {name}", "prompt": f"run echo {name}", "subagent_type": "general-purpose"},
            )
            return [start, described]

        await self.say(sid, "Working.")
        await self.send(
            sid,
            start_tool_call("main-1", "echo main", kind="execute", status="pending", raw_input={"command": "echo main"}),
            update_tool_call("main-1", status="in_progress"),
            update_tool_call("main-1", status="completed", raw_output="main"),
            *agent_call("agent-a", "sub-a"),
            parented(start_tool_call("sub-a-1", "echo sub-a", kind="execute", status="pending"), "agent-a"),
            parented(update_agent_message_text("sub-a says hi"), "agent-a"),
            parented(update_tool_call("sub-a-1", status="completed", raw_output="sub-a"), "agent-a"),
            update_tool_call("agent-a", status="completed", content=[tool_content(text_block("sub-a result"))]),
            *agent_call("agent-b", "sub-b"),
            start_tool_call("sub-b-1", "echo sub-b", kind="execute", status="pending"),
            parented(update_tool_call("sub-b-1", status="in_progress"), "agent-b"),
            update_tool_call("sub-b-1", title="echo sub-b (still running)"),
            update_tool_call("sub-b-1", status="completed", raw_output="sub-b"),
            update_tool_call("agent-b", status="completed", content=[tool_content(text_block("sub-b result"))]),
        )
        await self.say(sid, "Done.")
        usage = Usage(input_tokens=100, output_tokens=20, cached_read_tokens=5, total_tokens=120)
        return PromptResponse(stop_reason="end_turn", usage=usage)

    async def turn_hang(self, sid: str) -> PromptResponse:
        start = start_tool_call("agent-h", "Task", kind="think", status="pending",
                                raw_input={"description": "Hang", "prompt": "hang around", "subagent_type": "general-purpose"})
        start.field_meta = {"claudeCode": {"toolName": "Agent"}}
        await self.say(sid, "Starting.")
        await self.send(
            sid,
            start_tool_call("main-h", "sleep", kind="execute", status="in_progress"),
            start,
            parented(start_tool_call("sub-h-1", "sleep more", kind="execute", status="in_progress"), "agent-h"),
            parented(start_tool_call("sub-h-2", "later", kind="execute", status="pending"), "agent-h"),
        )
        await self.cancelled[sid].wait()
        return PromptResponse(stop_reason="cancelled")

    async def turn_dangling(self, sid: str) -> PromptResponse:
        await self.send(sid, start_tool_call("main-d", "never ran", kind="execute", status="pending"))
        await self.say(sid, "Dropped it.")
        return PromptResponse(stop_reason="end_turn")

    async def turn_incomplete(self, sid: str) -> PromptResponse:
        await self.send(sid, start_tool_call("main-i", "ran", kind="execute", status="in_progress"))
        return PromptResponse(stop_reason="end_turn")

    async def turn_crash(self, sid: str) -> PromptResponse:
        await self.send(sid, start_tool_call("main-c", "doomed", kind="execute", status="in_progress"))
        await asyncio.sleep(0.1)  # let the update reach the pipe before dying
        print("fake agent: crashing on purpose", file=sys.stderr, flush=True)
        os._exit(3)

    async def turn_status(self, sid: str) -> PromptResponse:
        # `cancelled` is not in ACP's status enum: build the update without validation.
        ended = ToolCallProgress.model_construct(session_update="tool_call_update", tool_call_id="main-s", status="cancelled")
        await self.send(sid, start_tool_call("main-s", "dropped", kind="execute", status="in_progress"), ended)
        return PromptResponse(stop_reason="end_turn")

    async def turn_permission(self, sid: str) -> PromptResponse:
        await self.send(sid, start_tool_call("main-p", "rm -rf build", kind="execute", status="pending"))
        options = [
            PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
            PermissionOption(option_id="no", name="Reject", kind="reject_once"),
        ]
        answer = await self.conn.request_permission(
            session_id=sid, tool_call=ToolCallUpdate(tool_call_id="main-p", title="rm -rf build"), options=options
        )
        chosen = getattr(answer.outcome, "option_id", "cancelled")
        status = "completed" if chosen == "yes" else "failed"
        await self.send(sid, update_tool_call("main-p", status=status, raw_output=f"permission: {chosen}"))
        return PromptResponse(stop_reason="end_turn")

    async def turn_mode(self, sid: str) -> PromptResponse:
        await self.say(sid, f"mode={self.mode}")
        return PromptResponse(stop_reason="end_turn")


async def main() -> None:
    pid_file = os.environ.get("FAKE_AGENT_PID_FILE")
    if pid_file:
        with open(pid_file, "a") as out:
            out.write(f"{os.getpid()}\n")
    if "--crash-on-start" in sys.argv:
        print("fake agent: cannot start (on purpose)", file=sys.stderr, flush=True)
        sys.exit(2)
    if "--never-answer" in sys.argv:
        await asyncio.sleep(3600)
    await run_agent(FakeAgent())


if __name__ == "__main__":
    asyncio.run(main())
