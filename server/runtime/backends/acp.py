"""The ``acp`` agent kind: a conversation driven by an external ACP agent (e.g. Claude Code
through ``@agentclientprotocol/claude-agent-acp``).

Each user message is one ``session/prompt`` turn. While a turn runs, the session's queue
(every message the agent sent, in wire order) is fed to the ``SessionMapper``, and its actions
are carried out against the host: events emitted in the conversation's own stream or through
the sub-agent the peer named, sub-agents started and finished. The subprocess starts on the
first run and is kept across runs; ``close`` ends it.

A turn ends when the agent answers the prompt, or early: cancelled (interrupt), superseded by a
new user message, silent for ``idle_timeout``, or the agent exits. Every call still in flight
is then closed with its parent, and failures are raised as ``ACPError``.

With ``permissions: "ask"`` each ``session/request_permission`` is asked of a person in a task
of its own (the turn goes on mapping: other sub-agents keep moving), filed in the agent whose
lane the call belongs to; the peer gets the chosen ``optionId``. A turn that stops early, or an
agent that exits, resolves the requests still waiting ``cancelled`` first.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ...acp.child_sessions import ChildSessions
from ...acp.client import ACPSession
from ...acp.incoming import Incoming, is_subagent_update, unanswered
from ...acp.mapping import Action, CloseReason, Emit, SessionMapper, StartSubagent, SubagentWorkState
from ...acp.turns import turn_call
from ...acp.peer_permissions import asked_permission, peer_answer, policy_answer
from ...environment import peer_environment
from ...errors import ACPError
from ...events import ConversationStateUpdateEvent, Event
from ...resources import project_path
from .base import AgentHost
from ...specs import ACPAgentSpec

log = logging.getLogger(__name__)

POLL_SECONDS = 0.25
"""How often a waiting turn looks for a superseding message and its timeouts."""
CANCEL_GRACE = 5.0
"""Seconds an agent gets, after ``session/cancel``, to report its calls and answer the prompt
before it is taken to be stuck and stopped."""
EXIT_GRACE = 5.0
"""Seconds to wait for the connection to close once the agent process has exited."""

SESSION_KEY = "acp_session"
"""The ``ConversationStateUpdateEvent`` key recording the peer's session id (``{"session_id"}``)."""
CLAUDE_SUBAGENT_TEXT = {"claudeCode": {"options": {"forwardSubagentText": True}}}
"""``session/new`` ``_meta`` asking claude-agent-acp for its sub-agents' text (other agents
ignore it)."""


class ACPBackend:
    """Drives one conversation through an ACP agent subprocess. Implements ``AgentBackend``."""

    holds_session = True  # a peer process and its session: kept until the root is unloaded

    def __init__(
        self, spec: ACPAgentSpec, *, command: str, args: list[str], env: dict[str, str], cwd: Path, policy_asks: bool = False
    ) -> None:
        self.spec = spec
        self.asks = spec.permissions == "ask" or policy_asks
        """Whether the peer's requests come to the backend: ``permissions: "ask"``, or a tree
        ``approval`` policy (inherited from a native parent) that may name the peer's tools."""
        self.command = command
        self.args = args
        self.env = env
        self.cwd = cwd
        self._session: ACPSession | None = None
        self._mapper = SessionMapper()
        self._children = ChildSessions(self._mapper)
        """The subagents RFD's child sessions, folded into the mapper's input."""
        self._subagents: dict[str, tuple[AgentHost, AgentHost]] = {}
        """Agent call id -> (its sub-agent's host, the host that started it)."""
        self._asks: dict[asyncio.Task[None], str | None] = {}
        """Permission requests waiting for a person (``permissions: "ask"``), with the lane
        (Agent call id) of the call that asks."""

    @classmethod
    def from_spec(cls, agent: dict[str, Any], host: AgentHost) -> ACPBackend:
        """Validate ``agent`` and resolve its paths. Relative ``command``/``args`` paths that do
        not exist in ``cwd`` but do under the project root (``peers/node_modules/...``) are made
        absolute; ``env`` is merged over the server's environment, ``OH_*`` left out."""
        try:
            spec = ACPAgentSpec.model_validate(agent)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'agent'}: {e['msg']}" for e in exc.errors())
            raise ACPError(f"invalid acp agent: {problems}", code="bad_agent") from exc
        cwd = host.workspace / spec.cwd if spec.cwd else host.workspace
        return cls(
            spec,
            command=project_path(spec.command, cwd),
            args=[project_path(arg, cwd) for arg in spec.args],
            env=peer_environment(spec.env),
            cwd=cwd,
            policy_asks=not host.approval.never,
        )

    # -- runs and turns ---------------------------------------------------------------------

    async def run(self, host: AgentHost) -> str | None:
        answer = None
        while not host.pause_requested:
            messages = host.take_user_messages()
            if not messages:
                return answer
            for text in messages:
                answer = await self.run_turn(host, text)
        return None

    async def run_turn(self, host: AgentHost, text: str) -> str | None:
        """One prompt turn; its final text, ``None`` if it wrote none or was superseded."""
        session = await self.open_session(host)
        stale = session.drain()
        # The states a reopened session reports after its load are the current ones.
        await self.apply(host, [a for item in stale if is_subagent_update(item) for a in self.map(item)])
        if stale:
            log.debug("dropping %d message(s) the agent sent between turns", len(stale))
            unanswered(stale)
        self._mapper.begin_turn()
        prompt = session.prompt(text)
        try:
            return await self.follow_turn(host, session, prompt)
        except asyncio.CancelledError as exc:
            note = exc.args[0] if exc.args and isinstance(exc.args[0], str) else None
            await self.stop_turn(host, session, prompt, CloseReason.CANCELLED, note=note)
            raise

    async def follow_turn(self, host: AgentHost, session: ACPSession, prompt: asyncio.Task[Any]) -> str | None:
        """Map what the agent sends until it answers the prompt (or the turn stops early)."""
        clock = asyncio.get_running_loop().time
        heard_at, exited_at = clock(), None
        while True:
            if host.has_pending_messages:
                await self.stop_turn(host, session, prompt, CloseReason.SUPERSEDED)
                return None
            try:
                item = await asyncio.wait_for(session.queue.get(), POLL_SECONDS)
            except TimeoutError:
                if exited_at is not None and clock() - exited_at > EXIT_GRACE:
                    await self.stop_turn(host, session, prompt, CloseReason.FAILED)
                    raise ACPError(f"ACP agent {session.label!r} exited during the turn: {session.exit_detail()}", code="acp_crashed")
                if self._asks:
                    heard_at = clock()  # it waits for a person, not the other way round
                if clock() - heard_at > self.spec.idle_timeout:
                    await self.stop_turn(host, session, prompt, CloseReason.TIMEOUT)
                    raise ACPError(
                        f"ACP agent {session.label!r} sent nothing for {self.spec.idle_timeout:g} s; the turn was stopped",
                        code="acp_idle_timeout",
                    )
                continue
            heard_at = clock()
            if item.kind == "prompt_done":
                return await self.finish_turn(host, session, prompt)
            if item.kind == "exited":
                exited_at = clock()  # its answer (or the connection's end) is on its way
                await self.drop_asks(f"the ACP agent exited (code {item.payload})")
                continue
            await self.apply(host, self.map(item))
            if item.answer is not None:
                self.ask(host, item)

    async def finish_turn(self, host: AgentHost, session: ACPSession, prompt: asyncio.Task[Any]) -> str | None:
        """The prompt was answered: map what came with it, close what the agent left open."""
        late = session.drain()
        unanswered(late)  # asked as the turn ended: nobody will wait for those answers
        await self.apply(host, [a for item in late for a in self.map(item)])
        error = await session.prompt_error(prompt)
        if error is not None:
            await self.drop_asks(error.detail)
            await self.apply(host, self._children.end_turn())
            await self.apply(host, self._mapper.abort_turn(CloseReason.FAILED).actions)
            if error.code == "acp_crashed":
                await self.discard_session()
            raise error
        used = turn_call(session.last_prompt_result, self._mapper.turn_cost())
        if used is not None:
            await host.add_usage(*used)
        await self.apply(host, self._children.end_turn())
        end = self._mapper.end_turn()
        await self.apply(host, end.actions)
        if end.incomplete:
            raise ACPError(
                f"the turn ended with tool call(s) that ran but never returned a result: {', '.join(end.incomplete)}",
                code="incomplete_tool_call",
            )
        return end.text

    async def stop_turn(
        self, host: AgentHost, session: ACPSession, prompt: asyncio.Task[Any], reason: CloseReason, *, note: str | None = None
    ) -> None:
        """End a turn early: permission requests still waiting resolved ``cancelled`` (the peer
        told so), ``session/cancel``, a short grace for the agent to report its own calls, then
        every call still in flight is closed (with its parent). An agent that does not answer
        the cancel, or has stopped responding, is stopped."""
        self._mapper.stopping(reason)
        await self.drop_asks(note or reason.value)
        if reason is not CloseReason.TIMEOUT and session.alive:
            try:
                # Background children outlive a parent's cancel in the RFD: each is stopped too.
                for child in self._children.live():
                    if child.cancellable:
                        await asyncio.wait_for(session.cancel_child(child.session_id), CANCEL_GRACE)
                await asyncio.wait_for(session.cancel(), CANCEL_GRACE)
                await self.await_prompt(host, session, prompt, CANCEL_GRACE)
            except TimeoutError:
                pass
        if prompt.done():
            late = session.drain()
            unanswered(late)
            await self.apply(host, [a for item in late for a in self.map(item)])
        await self.apply(host, self._children.end_turn())
        await self.apply(host, self._mapper.abort_turn(reason).actions)
        if not prompt.done() or not session.alive:
            await self.discard_session()

    async def await_prompt(self, host: AgentHost, session: ACPSession, prompt: asyncio.Task[Any], seconds: float) -> None:
        """Map what the agent sends until it answers the prompt, for at most ``seconds``."""
        async with asyncio.timeout(seconds):
            while not prompt.done():
                item = await session.queue.get()
                if item.kind == "exited":
                    return
                await self.apply(host, self.map(item))
                unanswered([item])  # asked while stopping: nobody answers it now

    # -- mapping and carrying out -----------------------------------------------------------

    def map(self, item: Incoming) -> list[Action]:
        if item.kind == "update":
            return self._children.receive(item.payload)
        if item.kind == "permission":
            return self._children.receive_permission(item.payload)
        return []

    async def apply(self, host: AgentHost, actions: list[Action]) -> None:
        """Carry out the mapper's actions, in order."""
        for action in actions:
            if isinstance(action, Emit):
                await self.emit(host, action.event)
            elif isinstance(action, StartSubagent):
                parent = self.lane_host(host, action.lane)
                child = await parent.start_subagent(
                    action.tool_call_id, subagent_type=action.subagent_type, description=action.description, cwd=action.cwd
                )
                self._subagents[action.tool_call_id] = (child, parent)
                session = self._children.child_of_launch(action.tool_call_id)
                if session is not None and session.cancellable:
                    child.stop_hook = functools.partial(self.cancel_child, action.tool_call_id)
            elif isinstance(action, SubagentWorkState):
                if action.tool_call_id in self._subagents:
                    value = dict(action.value)
                    session = self._children.child_of_launch(action.tool_call_id)
                    if session is not None and session.cancellable and value.get("state") != "idle":
                        # Said in the stream, so every projection (taskwire acp) can offer the cancel.
                        value["cancellable"] = True
                    state = ConversationStateUpdateEvent(key="work_state", value=value, parent_tool_use_id=action.tool_call_id)
                    await self.emit(host, state)
            elif action.tool_call_id in self._subagents:
                child, parent = self._subagents[action.tool_call_id]
                if action.usage is not None:
                    await child.add_usage(action.usage)
                await parent.finish_subagent(child, status=action.status, result=action.result, usage=action.usage)

    async def emit(self, host: AgentHost, event: Event) -> None:
        """Emit in the event's lane: this conversation, or the sub-agent its peer parent spawned.
        The event already carries the peer's parent; the sub-agent's id completes the stamp
        (its host keeps a full stamp: innermost wins)."""
        child = self.lane_host(host, event.parent_tool_use_id)
        if child is host:
            event.parent_tool_use_id = None  # no sub-agent to carry it: it stays where it landed
        else:
            event.subagent_id = child.conversation_id
        # The peer reports what it did: no reason to hold its stream to our commits. The
        # turn's end (a status change) waits, and with it everything emitted before.
        await child.emit(event, wait=False)

    def lane_host(self, host: AgentHost, lane: str | None) -> AgentHost:
        """The host a lane's events go to. A lane whose sub-agent never started (a start cut
        short by a cancel) falls back to this conversation."""
        started = self._subagents.get(lane) if lane is not None else None
        return started[0] if started is not None else host

    # -- permission requests (``permissions: "ask"``) -----------------------------------------

    def ask(self, host: AgentHost, item: Incoming) -> None:
        """Ask a person about ``item`` (a ``permission`` item), in a task of its own."""
        task = asyncio.create_task(self._ask(host, item), name="acp permission request")
        self._asks[task] = self.asking_lane(item.payload)
        task.add_done_callback(lambda done: self._asks.pop(done, None))

    def asking_lane(self, params: dict[str, Any]) -> str | None:
        """The lane a permission request belongs to: its call's remembered parent, else (a
        child session's request for a call not seen yet) the launch of the session it names."""
        tool_call = params.get("toolCall")
        call = self._mapper.call(tool_call.get("toolCallId") if isinstance(tool_call, dict) else None)
        if call is not None and call.parent is not None:
            return call.parent
        return self._children.launch_of(params.get("sessionId"))

    async def _ask(self, host: AgentHost, item: Incoming) -> None:
        assert item.answer is not None
        option_id: str | None = None
        try:
            tool_call = item.payload.get("toolCall")
            call = self._mapper.call(tool_call.get("toolCallId") if isinstance(tool_call, dict) else None)
            asked = asked_permission(item.payload, call)
            if asked is None:
                log.warning("ACP agent asked a permission naming no call or offering no known option; answered cancelled")
                return
            lane = self.asking_lane(item.payload)
            if lane is None and self._children.unplaced(item.payload.get("sessionId")):
                log.warning("ACP child session %s asked a permission before it could be placed; answered cancelled",
                            item.payload.get("sessionId"))
                return  # filing it in the parent would misattribute it
            # Filed where the call's own events go: its remembered lane's sub-agent, else here.
            asker = self.lane_host(host, lane)
            if self.spec.permissions != "ask" and not asker.approval.asks(asked.tool_name):
                option_id = policy_answer(asked.options, allow=self.spec.permissions == "allow")
                return  # the tree's policy does not name this tool: answered as configured
            resolution = await asker.request_permission(
                tool_call_id=asked.tool_call_id, tool_name=asked.tool_name, title=asked.title,
                arguments=asked.arguments, options=asked.options,
            )
            option_id = peer_answer(asked.options, resolution.outcome, resolution.option_id)
        except Exception:  # the request could not be filed: the peer must not wait for ever
            log.exception("could not ask a person about an ACP permission request; answered cancelled")
        finally:
            if not item.answer.done():
                item.answer.set_result(option_id)

    async def drop_asks(self, reason: str, *, lane: str | None = None) -> None:
        """Resolve every request still waiting ``cancelled`` (with ``reason``), or (``lane``)
        those of that sub-agent; the peer gets a cancelled outcome."""
        asks = [task for task, of in self._asks.items() if lane is None or of == lane]
        for task in asks:
            task.cancel(reason)
        if asks:
            await asyncio.gather(*asks, return_exceptions=True)

    async def cancel_child(self, launch_id: str) -> None:
        """Stop the child session launched by ``launch_id`` alone (``session/cancel`` naming it):
        its waiting requests resolve ``cancelled``; it reports its end, its siblings go on."""
        child = self._children.child_of_launch(launch_id)
        session = self._session
        if child is None or session is None or not session.alive:
            raise ACPError("the ACP agent's session for this sub-agent is gone", code="acp_cancel_failed")
        await self.drop_asks("the sub-agent was cancelled", lane=launch_id)
        await session.cancel_child(child.session_id)

    # -- the session ------------------------------------------------------------------------

    async def open_session(self, host: AgentHost) -> ACPSession:
        """The live session, started (subprocess, initialize, session/new, mode) if need be.
        The peer's session id is stored in the conversation's stream; after a restart (or a
        crash of the agent) the next start reopens that session with ``session/load``, and its
        replay (history taskwire stored already) only teaches the children's launches."""
        if self._session is not None and self._session.alive:
            return self._session
        await self.discard_session()
        earlier = await host.stored_state(SESSION_KEY)
        earlier_id = earlier.get("session_id") if isinstance(earlier, dict) else None
        self._session = await ACPSession.start(
            command=self.command,
            args=self.args,
            env=self.env,
            cwd=self.cwd,
            session_mode=self.spec.session_mode,
            permissions="ask" if self.asks else self.spec.permissions,
            startup_timeout=self.spec.startup_timeout,
            session_meta=CLAUDE_SUBAGENT_TEXT if self.spec.subagent_text else None,
            subagent_sessions=self.spec.subagent_sessions == "auto",
            load_session_id=earlier_id if isinstance(earlier_id, str) else None,
        )
        session = self._session
        self._children.root_session_id = session.session_id
        if session.loaded:  # its replay is what is stored already: only the children are learnt
            self._children.learn([item.payload for item in session.drain() if item.kind == "update"])
        if session.session_id != earlier_id:
            await host.emit(ConversationStateUpdateEvent(key=SESSION_KEY, value={"session_id": session.session_id}))
        return session

    async def discard_session(self) -> None:
        await self.drop_asks("the ACP agent's session ended")
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def close(self) -> None:
        await self.discard_session()

