"""Claude Code's ``can_use_tool`` callback asked of a person (the ``claude_sdk`` backend's part).

Installed only when the agent's spec says ``permissions: "ask"`` or the tree's approval policy
asks for something; otherwise Claude Code decides alone, as it always did. Claude Code calls it
whenever its ``permission_mode`` would ask. The request is filed in the agent the call belongs
to: the lane of the call ``tool_use_id`` names (once the dispatcher has seen it: the callback
can overtake the message carrying the call), else the sub-agent whose ``task_started`` named
``agent_id``, else the main agent. Allowed -> ``PermissionResultAllow``; anything else ->
``PermissionResultDeny`` with the person's reason, which Claude Code hands its model.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable

from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny, ToolPermissionContext

from ...claude_sdk import ROOT, Action, ClaudeDispatcher, Lane
from ...permissions.requests import refusal_text, request_title
from .base import AgentHost

log = logging.getLogger(__name__)

LANE_WAIT = 5.0
"""Seconds a callback waits for the dispatcher to see the call it is about, before it files
the request by ``agent_id`` (or in the main agent)."""


class ClaudePermissions:
    """The ``can_use_tool`` callback of one Claude Code session, and the requests it has waiting."""

    def __init__(
        self,
        dispatcher: ClaudeDispatcher,
        hosts: dict[Lane, AgentHost],
        lock: asyncio.Lock,
        apply: Callable[[list[Action]], Awaitable[None]],
        *,
        ask_all: bool,
    ) -> None:
        self._dispatcher = dispatcher
        self._hosts = hosts
        self._apply = apply
        """Carries out the dispatcher's actions (the backend's ``_apply``), under ``lock``."""
        self._lock = lock
        """Held while a message is fed and its actions carried out: looked up under it, a call
        the dispatcher knows has had its event emitted, so the request comes after it."""
        self._ask_all = ask_all
        """``permissions: "ask"``: every call Claude Code asks about goes to a person; else only
        those the tree's approval policy names."""
        self._fed = asyncio.Event()
        self._asks: dict[asyncio.Task[Any], Lane] = {}

    @property
    def waiting(self) -> bool:
        """Whether a request waits for a person now."""
        return bool(self._asks)

    def fed(self) -> None:
        """The dispatcher took another message: callbacks waiting for their call look again."""
        self._fed.set()
        self._fed = asyncio.Event()

    async def can_use_tool(self, tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext) -> Any:
        """``ClaudeAgentOptions.can_use_tool``."""
        lane = await self._lane(context.tool_use_id, context.agent_id)
        host = self._hosts.get(lane) or self._hosts[ROOT]
        if not (self._ask_all or host.approval.asks(tool_name)):
            return PermissionResultDeny(message=f"{tool_name} needs permission, and this agent's approval policy does not ask for it.")
        await self._waiting(context.tool_use_id, True)
        ask = asyncio.ensure_future(host.request_permission(
            tool_call_id=context.tool_use_id or "", tool_name=tool_name,
            title=context.title or request_title(tool_name, tool_input), arguments=tool_input,
            reason=context.decision_reason,
        ))
        self._asks[ask] = lane
        try:
            resolution = await asyncio.shield(ask)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if ask.done() and not (current is not None and current.cancelling()):
                # Cancelled on our side (interrupt, sub-agent cancel, close): Claude Code must
                # still get an answer, or its call waits for ever.
                return PermissionResultDeny(message=refusal_text(tool_name, "cancelled", None))
            ask.cancel("Claude Code withdrew the permission request")  # or the SDK is closing
            await asyncio.gather(ask, return_exceptions=True)
            raise
        finally:
            self._asks.pop(ask, None)
        if resolution.allowed:
            await self._waiting(context.tool_use_id, False)
            return PermissionResultAllow()
        return PermissionResultDeny(message=refusal_text(tool_name, resolution.outcome, resolution.reason))

    async def _waiting(self, tool_use_id: str | None, waiting: bool) -> None:
        # The call shows ``pending`` while it waits (it has not run), ``in_progress`` once allowed.
        async with self._lock:
            await self._apply(self._dispatcher.permission_wait(tool_use_id, waiting))

    async def _lane(self, tool_use_id: str | None, agent_id: str | None) -> Lane:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LANE_WAIT
        while True:
            async with self._lock:
                seen, lane = self._dispatcher.lane_asking(tool_use_id, agent_id)
                waiting = self._fed
            if seen and lane in self._hosts:
                return lane
            remaining = deadline - loop.time()
            if remaining <= 0:
                log.info("claude_sdk: call %s never came through; its permission is filed by agent_id", tool_use_id)
                return lane if lane in self._hosts else ROOT
            try:
                await asyncio.wait_for(waiting.wait(), remaining)
            except TimeoutError:
                pass

    async def cancel(self, reason: str, lanes: Callable[[Lane], bool] | None = None) -> None:
        """Resolve the waiting requests (of the lanes ``lanes`` accepts) ``cancelled``; Claude
        Code is told they were denied."""
        asks = [task for task, lane in self._asks.items() if lanes is None or lanes(lane)]
        for task in asks:
            task.cancel(reason)
        if asks:
            await asyncio.gather(*asks, return_exceptions=True)

