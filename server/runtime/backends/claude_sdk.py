"""The ``claude_sdk`` backend: Claude Code driven through the ``claude-agent-sdk`` package.

One Claude Code session per conversation, started at the first run and closed with the
conversation. A pump task reads every SDK message of the session, for as long as it lives, and
hands each to the ``ClaudeDispatcher`` (``server/claude_sdk/dispatch.py``), the one place that
decides what a message means; this module only carries out its actions through hosts: the
conversation's own for the main agent, and one child host per Claude Code sub-agent (started with
``host.start_subagent`` under the lane that spawned it). So a sub-agent finishing after the
run's result still lands in its own stream, and no run waits for it.

``run`` sends each user message as a prompt and waits for the result that answers it.
Permission requests (``can_use_tool``) are ``claude_permissions.py``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from typing import Any

from pydantic import ValidationError

from ...claude_sdk import ROOT, Action, ClaudeDispatcher, CountUsage, Emit, Lane, TurnEnded
from ...claude_sdk.replay import ReplaySession
from ...claude_sdk.session import ClaudeCodeSession, MessageSource, claude_options
from ...errors import BackendError, BadRequest, ClaudeSDKError
from ...llm import script_roots
from ...events import SubagentFinishedEvent, SubagentStartedEvent
from taskwire_client.ids import new_id
from .base import AgentHost, run_user_turns
from .claude_permissions import ClaudePermissions
from ...specs import ClaudeSDKAgentSpec

log = logging.getLogger(__name__)

DRAIN_TIMEOUT = 10.0
"""Seconds the next prompt waits for an interrupted turn's result before it is sent anyway."""
INTERRUPT_TIMEOUT = 10.0


class ClaudeSDKBackend:
    """Drives one conversation's Claude Code session. Implements ``AgentBackend``."""

    holds_session = True  # a peer process and its session: kept until the root is unloaded

    def __init__(self, spec: ClaudeSDKAgentSpec, source: MessageSource | None = None, *, ask: bool = False) -> None:
        self.spec = spec
        self.dispatcher = ClaudeDispatcher()
        self._hosts: dict[Lane, AgentHost] = {}
        self._lock = asyncio.Lock()
        self.permissions = (
            ClaudePermissions(self.dispatcher, self._hosts, self._lock, self._apply, ask_all=spec.permissions == "ask")
            if ask else None
        )
        """The ``can_use_tool`` callback's side, when a person answers Claude Code's asks."""
        self.source: MessageSource = source  # type: ignore[assignment]
        self._pump: asyncio.Task[None] | None = None
        self._failure: ClaudeSDKError | None = None
        self._turn_end: asyncio.Future[TurnEnded] | None = None
        self._drained = asyncio.Event()
        self._last_message = 0.0
        self._closed = False

    @classmethod
    async def from_spec(cls, agent: dict[str, Any], host: AgentHost) -> ClaudeSDKBackend:
        """The backend for a conversation's ``agent`` spec: the real CLI, or a ``replay`` file."""
        try:
            spec = ClaudeSDKAgentSpec.model_validate(agent)
        except ValidationError as exc:
            raise BackendError(f"invalid claude_sdk agent: {exc}", code="bad_agent") from exc
        backend = cls(spec, ask=spec.permissions == "ask" or not host.approval.never)
        callback = backend.permissions.can_use_tool if backend.permissions is not None else None
        if spec.replay:
            # The path is a client's: read only under the config folder and the workspace roots.
            replay = await ReplaySession.load(spec.replay, script_roots(host.settings))
            replay.can_use_tool = callback
            backend.source = replay
        else:
            backend.source = ClaudeCodeSession(claude_options(spec, host.workspace, can_use_tool=callback))
        return backend

    # -- running --------------------------------------------------------------------------

    async def run(self, host: AgentHost) -> str | None:
        self._hosts[ROOT] = host
        await self._start()
        if host.is_subagent:
            host.steer_hook = self.steer  # a task's sub-agent running Claude Code: a person may write to it
        return await run_user_turns(host, self.run_turn)

    async def steer(self, text: str) -> None:
        """A person's message to this Claude Code session mid-turn: sent as a prompt of its own,
        which Claude Code folds into its next model request (after the tool results in flight);
        the turn's result then answers both."""
        if isinstance(self.source, ReplaySession):
            raise BadRequest("a replayed transcript takes no new message", code="subagent_not_steerable")
        if not self.dispatcher.turn_active:
            raise BadRequest("Claude Code is between turns", code="subagent_not_steerable")
        await self.source.query(text, new_id())

    async def run_turn(self, text: str) -> str | None:
        """Send one prompt; its answer, once the result that answers it has come."""
        if self._failure is not None:
            raise self._failure
        await self._wait_drained()
        loop = asyncio.get_running_loop()
        async with self._lock:
            await self._apply(self.dispatcher.begin_turn(prompt_id := new_id()))
            self._turn_end = loop.create_future()
            self._last_message = loop.time()
        try:
            await self.source.query(text, prompt_id)
            end = await self._await_turn_end()
        except (asyncio.CancelledError, ClaudeSDKError):
            if self.dispatcher.turn_active:
                await self._interrupt()
            raise
        finally:
            self._turn_end = None
        if end.error is not None:
            raise ClaudeSDKError(end.error, code=end.code)
        return end.answer

    async def _await_turn_end(self) -> TurnEnded:
        assert self._turn_end is not None
        loop = asyncio.get_running_loop()
        while True:
            if self.permissions is not None and self.permissions.waiting:
                self._last_message = loop.time()  # Claude Code waits for a person: not idle
            quiet_for = loop.time() - self._last_message
            if quiet_for >= self.spec.idle_timeout:
                raise ClaudeSDKError(
                    f"no message from Claude Code for {self.spec.idle_timeout:g} s", code="idle_timeout"
                )
            done, _ = await asyncio.wait({self._turn_end}, timeout=self.spec.idle_timeout - quiet_for)
            if done:
                return self._turn_end.result()

    async def _interrupt(self) -> None:
        # Closing comes first and never waits on Claude Code: an interrupt must not hang.
        if self.permissions is not None:
            await self.permissions.cancel("the run was interrupted")
        async with self._lock:
            await self._apply(self.dispatcher.interrupt())
            self._drained.clear()
        with contextlib.suppress(ClaudeSDKError, asyncio.TimeoutError):
            await asyncio.wait_for(self.source.interrupt(), INTERRUPT_TIMEOUT)

    async def _wait_drained(self) -> None:
        if self.dispatcher.draining:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._drained.wait(), DRAIN_TIMEOUT)

    # -- the session and its pump ---------------------------------------------------------

    async def _start(self) -> None:
        if self._pump is not None:
            return
        await self.source.connect()
        self._pump = asyncio.create_task(self._pump_messages(), name="claude_sdk pump")

    async def _pump_messages(self) -> None:
        """Every message of the session, through the dispatcher, until the session ends."""
        try:
            async for message in self.source.receive():
                self._last_message = asyncio.get_running_loop().time()
                async with self._lock:
                    await self._apply(self.dispatcher.feed(message))
                    if not self.dispatcher.draining:
                        self._drained.set()
                if self.permissions is not None:
                    self.permissions.fed()
        except ClaudeSDKError as exc:
            failure = exc
        else:
            if self._closed:
                return
            failure = ClaudeSDKError("Claude Code exited", code="claude_code_exited")
        self._failure = failure
        if self.permissions is not None:  # nobody is left to hand an answer to
            await self.permissions.cancel(failure.detail)
        async with self._lock:
            await self._apply(self.dispatcher.stop(failure.detail, code=failure.code))

    async def _apply(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, Emit):
                await self._emit(action.lane, action)
            elif isinstance(action, CountUsage):
                host = self._hosts.get(action.lane)
                if host is not None:
                    await host.add_usage(action.usage, action.call)
            elif isinstance(action, TurnEnded):
                if self._turn_end is not None and not self._turn_end.done():
                    self._turn_end.set_result(action)

    async def _emit(self, lane: Lane, action: Emit) -> None:
        event = action.event
        if isinstance(event, SubagentStartedEvent):
            parent = self._hosts.get(self.dispatcher.parent_lane(lane)) or self._hosts[ROOT]
            child = self._hosts[lane] = await parent.start_subagent(
                str(lane), subagent_type=event.subagent_type, description=event.description,
                agent=self._subagent_agent(),
            )
            child.stop_hook = functools.partial(self._stop_subagent, lane)
        elif isinstance(event, SubagentFinishedEvent):
            child = self._hosts.pop(lane, None)
            parent = self._hosts.get(self.dispatcher.parent_lane(lane)) or self._hosts[ROOT]
            if child is not None:
                await parent.finish_subagent(child, status=event.status, result=event.result, usage=event.usage)
        else:
            host = self._hosts.get(lane)
            if host is None:
                log.warning("claude_sdk: dropped %s for lane %s that never started", event.kind, lane)
                return
            await host.emit(event, wait=False)  # a report of what Claude Code did (see ACPBackend.emit)

    async def _stop_subagent(self, lane: Lane) -> None:
        """Ask Claude Code to stop the sub-agent of ``lane``; it reports the end in its stream
        (the dispatcher finishes the lane ``cancelled``), and the parent goes on."""
        task_id = self.dispatcher.task_id(lane)
        if task_id is None:
            raise BadRequest(
                "Claude Code has not started this sub-agent's task yet; retry in a moment",
                code="subagent_not_cancellable",
            )
        if self.permissions is not None:
            await self.permissions.cancel("the sub-agent was cancelled", self._within(lane))
        await self.source.stop_task(task_id)

    def _within(self, lane: Lane) -> Any:
        """Whether a lane is ``lane`` or below it."""
        def below(other: Lane) -> bool:
            while other is not None:
                if other == lane:
                    return True
                other = self.dispatcher.parent_lane(other)
            return False
        return below

    def _subagent_agent(self) -> dict[str, Any]:
        # What a Claude Code sub-agent's record says it is; never the parent's env (secrets).
        return {"kind": "claude_sdk", **({"model": self.spec.model} if self.spec.model else {})}

    # -- the end --------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop the pump, close what is still open, end the Claude Code process. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self.permissions is not None:
            await self.permissions.cancel("the conversation was closed")
        with contextlib.suppress(ClaudeSDKError):
            await self.source.close()
        if self._pump is not None:
            self._pump.cancel()
            await asyncio.gather(self._pump, return_exceptions=True)
        if ROOT not in self._hosts:
            return
        try:
            async with self._lock:
                await self._apply(self.dispatcher.stop("Claude Code was stopped with its conversation"))
        except Exception:  # closing must not fail; the store may be going away too
            log.exception("claude_sdk: could not close the open sub-agents and calls")
