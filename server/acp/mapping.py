"""Sans-I/O: ACP ``session/update`` payloads in, taskwire actions out.

``SessionMapper`` is fed the raw payloads of one ACP session in wire order and answers with
``Emit`` / ``StartSubagent`` / ``FinishSubagent`` actions, which the backend carries out in
order against its host. It owns the attribution rules, so they are tested by feeding dicts:

- A *lane* is where an event belongs: ``None`` for the agent's own stream, or the
  ``tool_call_id`` of the peer's Agent call whose sub-agent produced it. An event of a lane
  carries that id in ``parent_tool_use_id``; the backend emits it through that sub-agent.
- A call's parent is read from every update (``_meta.claudeCode.parentToolUseId`` and the
  other ``PARENT_KEYS``) and remembered from the first one that names it. Events of the call
  sent before that stay where they landed; later ones, the terminal one included, carry it.
- An Agent call starts its sub-agent once its input names the prompt (or lazily, when a
  parent id shows up first) and finishes it when the call ends, before the call's own
  terminal event.
- Text and thought chunks become ``StreamingDeltaEvent``s of their lane, and each lane's text
  one ``MessageEvent`` when its turn (or its sub-agent) ends: sub-agent text never joins the
  parent's message.
- Calls still open when a turn ends are closed by one rule: never ran -> ``cancelled``, ran
  without a result -> ``failed`` (at a normal end that fails the turn).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from .toolcalls import ToolCallState, parent_of, text_of
from ..events.closing import closing_status, closing_text
from ..events import Event, MessageEvent, StreamingDeltaEvent, Usage

Lane = Union[str, None]



class CloseReason(enum.Enum):
    """Why the bridge closes calls the peer left open; the value ends the closing note."""

    END_TURN = "the turn ended"
    SUBAGENT_ENDED = "its sub-agent ended"
    CANCELLED = "the turn was cancelled"
    SUPERSEDED = "a new message superseded the turn"
    TIMEOUT = "the agent stopped responding"
    FAILED = "the agent failed"


@dataclass(frozen=True, slots=True)
class Emit:
    """Emit ``event`` in the lane ``event.parent_tool_use_id`` names (``None``: own stream)."""

    event: Event


@dataclass(frozen=True, slots=True)
class StartSubagent:
    """Start the sub-agent of the Agent call ``tool_call_id``, a call of ``lane``."""

    tool_call_id: str
    lane: Lane
    subagent_type: str
    description: str
    cwd: str | None = None
    """Its own working folder, when the peer says it differs from the parent's."""


@dataclass(frozen=True, slots=True)
class SubagentWorkState:
    """The sub-agent of ``tool_call_id`` reports its work state (``work_state`` value:
    ``{"state": running|requires_action|idle|unknown, "stop_reason"?, "error"?}``)."""

    tool_call_id: str
    value: dict[str, Any]


@dataclass(frozen=True, slots=True)
class FinishSubagent:
    """Finish the sub-agent of ``tool_call_id``."""

    tool_call_id: str
    status: Literal["completed", "error", "cancelled"]
    result: str
    usage: Usage | None = None


Action = Union[Emit, StartSubagent, FinishSubagent, SubagentWorkState]


@dataclass(slots=True)
class TurnEnd:
    """What ending a turn produced."""

    actions: list[Action]
    text: str | None
    """The agent's own text of the turn (``None`` if it wrote none)."""
    incomplete: list[str]
    """Calls that ran but never returned a result (the turn failed)."""


class _Text:
    """One lane's text of a turn: segments split where a tool call or a new message intervened."""

    def __init__(self) -> None:
        self.segments: list[str] = []
        self._message_id: str | None = None
        self._open = False

    def add(self, text: str, message_id: Any) -> None:
        if not self._open or (isinstance(message_id, str) and message_id != self._message_id):
            self.segments.append("")
            self._open = True
        if isinstance(message_id, str):
            self._message_id = message_id
        self.segments[-1] += text

    def interrupt(self) -> None:
        self._open = False

    def take(self) -> str | None:
        text = "\n\n".join(s.strip() for s in self.segments if s.strip())
        self.segments, self._open, self._message_id = [], False, None
        return text or None


@dataclass(slots=True)
class _Subagent:
    tool_call_id: str
    lane: Lane
    """Where its Agent call lives."""
    open: bool = True
    prompt_shown: bool = False
    text: _Text = field(default_factory=_Text)


class SessionMapper:
    """Translates one ACP session's updates into taskwire actions. No I/O.

    Feed ``receive_update`` (and ``receive_permission_request``) in wire order; call
    ``end_turn`` when the peer answers ``session/prompt``, or ``abort_turn`` when the turn is
    cancelled, superseded, times out or fails. State persists across turns.
    """

    def __init__(self) -> None:
        self._calls: dict[str, ToolCallState] = {}
        self._subagents: dict[str, _Subagent] = {}
        self._text = _Text()
        self._incomplete: list[str] = []
        self._stopping: CloseReason | None = None
        self._cost_total: float | None = None
        """The session's running cost as the agent last reported it (``usage_update`` ``cost``)."""
        self._cost_counted = 0.0

    # -- input ------------------------------------------------------------------------------

    def receive_update(self, update: dict[str, Any]) -> list[Action]:
        """One ``session/update`` ``update`` payload."""
        kind = update.get("sessionUpdate")
        if kind in ("tool_call", "tool_call_update"):
            call_id = update.get("toolCallId")
            return self._tool_call(call_id, update) if isinstance(call_id, str) and call_id else []
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            return self._chunk(update, "text" if kind == "agent_message_chunk" else "thought")
        if kind == "usage_update":
            self._see_cost(update.get("cost"))
        # user_message_chunk (our own prompt echoed), plans, modes, usage_update (context
        # size, not tokens billed; its cost is kept for the turn's end), commands, titles:
        # nothing of the conversation's record.
        return []

    def _see_cost(self, cost: Any) -> None:
        amount = cost.get("amount") if isinstance(cost, dict) else None
        if isinstance(cost, dict) and cost.get("currency", "USD") == "USD" and isinstance(amount, (int, float)) \
                and not isinstance(amount, bool) and amount >= 0:
            self._cost_total = float(amount)

    def turn_cost(self) -> float | None:
        """What the turn cost by the agent's own figure (claude-agent-acp sends Claude Code's
        running session total in ``usage_update``): the rise since the last turn's end, or
        ``None`` when the agent reported no cost."""
        total = self._cost_total
        if total is None:
            return None
        cost = round(total - self._cost_counted, 12) if total >= self._cost_counted else total  # a reset session
        self._cost_counted = total
        return cost

    def receive_permission_request(self, params: dict[str, Any]) -> list[Action]:
        """A ``session/request_permission`` request: its ``toolCall`` may announce or refine a
        call (the decision itself is the client's)."""
        tool_call = params.get("toolCall")
        if not isinstance(tool_call, dict) or not isinstance(tool_call.get("toolCallId"), str):
            return []
        return self._tool_call(tool_call["toolCallId"], tool_call)

    def call(self, call_id: Any) -> ToolCallState | None:
        """What the bridge knows of the peer's call ``call_id`` (its remembered parent, tool
        name, input), if it saw it."""
        return self._calls.get(call_id) if isinstance(call_id, str) else None

    def begin_turn(self) -> None:
        """A prompt is about to be sent. Calls that ended are forgotten (what the agent sends
        between turns is not mapped), except Agent calls: their sub-agents name lanes."""
        self._text = _Text()
        self._incomplete = []
        self._stopping = None
        self._calls = {k: c for k, c in self._calls.items() if c.open or k in self._subagents}

    def stopping(self, reason: CloseReason) -> None:
        """The turn is being stopped (``session/cancel`` sent): calls the peer now ends as
        ``failed`` were cut short, so their sub-agents end ``cancelled``, not ``error``."""
        self._stopping = reason

    def end_turn(self) -> TurnEnd:
        """The peer answered the prompt: close what it left open (never ran -> ``cancelled``;
        ran -> ``failed``, listed in ``incomplete``) and emit the turn's message."""
        return self._end(CloseReason.END_TURN)

    def abort_turn(self, reason: CloseReason) -> TurnEnd:
        """The turn stops early: close every call in flight (with its parent) and every
        sub-agent, and keep the text written so far."""
        return self._end(reason)

    def _end(self, reason: CloseReason) -> TurnEnd:
        actions: list[Action] = []
        self._close_lane(None, reason, actions)
        text = self._text.take()
        if text is not None:
            actions.append(Emit(MessageEvent(role="assistant", content=text)))
        incomplete = self._incomplete if reason is CloseReason.END_TURN else []
        self._incomplete = []
        return TurnEnd(actions, text, incomplete)

    # -- tool calls -------------------------------------------------------------------------

    def _tool_call(self, call_id: str, update: dict[str, Any]) -> list[Action]:
        call = self._calls.get(call_id)
        new = call is None
        if call is None:
            call = self._calls[call_id] = ToolCallState(call_id)
        was_open = call.open
        call.merge(update)
        actions: list[Action] = []
        if call.parent is not None:
            self._ensure_subagent(call.parent, actions)
            self._mark_ran(call.parent)
        if new:
            self._text_of(call.parent).interrupt()  # text after a call is a new segment
        if call.is_agent_call and call.subagent_prompt is not None:
            self._ensure_subagent(call_id, actions)
        sub = self._subagents.get(call_id)
        if was_open and not call.open and sub is not None and sub.open:
            status = {"completed": "completed", "failed": "error"}.get(call.status or "", "cancelled")
            if status == "error" and self._stopping in (CloseReason.CANCELLED, CloseReason.SUPERSEDED):
                status = "cancelled"
            self._finish(sub, status, call.result_text(), call.subagent_usage(), CloseReason.SUBAGENT_ENDED, actions)
        if call.changed():
            actions.append(Emit(call.event()))
        return actions

    def _mark_ran(self, call_id: str) -> None:
        # Work under an Agent call means the call runs, whatever status the peer last sent.
        spawning = self._calls.get(call_id)
        if spawning is not None:
            spawning.ran = True

    # -- text -------------------------------------------------------------------------------

    def _chunk(self, update: dict[str, Any], channel: Literal["text", "thought"]) -> list[Action]:
        text = text_of(update.get("content"))
        if not text:
            return []
        lane = parent_of(update)
        actions: list[Action] = []
        if lane is not None:
            self._ensure_subagent(lane, actions)
            self._mark_ran(lane)
        if channel == "text":
            self._text_of(lane).add(text, update.get("messageId"))
        actions.append(Emit(StreamingDeltaEvent(content=text, channel=channel, parent_tool_use_id=lane)))
        return actions

    def _text_of(self, lane: Lane) -> _Text:
        if lane is None:
            return self._text
        sub = self._subagents.get(lane)
        return sub.text if sub is not None else _Text()

    # -- sub-agents -------------------------------------------------------------------------

    def _ensure_subagent(self, call_id: str, actions: list[Action]) -> None:
        """Start the sub-agent of ``call_id`` unless it exists (lazily, if the Agent call was
        never seen), and show its prompt once the Agent call's input names it."""
        sub = self._subagents.get(call_id)
        spawning = self._calls.get(call_id)
        if sub is None:
            lane = spawning.parent if spawning is not None else None
            if lane is not None:
                self._ensure_subagent(lane, actions)
            sub = self._subagents[call_id] = _Subagent(call_id, lane)
            actions.append(
                StartSubagent(
                    call_id,
                    lane,
                    subagent_type=spawning.subagent_type if spawning is not None else "unknown",
                    description=spawning.description if spawning is not None else "",
                )
            )
        prompt = spawning.subagent_prompt if spawning is not None else None
        if prompt is not None and not sub.prompt_shown:
            sub.prompt_shown = True
            actions.append(Emit(MessageEvent(role="user", source="user", content=prompt, parent_tool_use_id=call_id)))

    def _finish(
        self,
        sub: _Subagent,
        status: Literal["completed", "error", "cancelled"],
        result: str,
        usage: Usage | None,
        reason: CloseReason,
        actions: list[Action],
    ) -> None:
        """End a sub-agent: close its calls still open, emit its message, then finish it."""
        self._close_lane(sub.tool_call_id, reason, actions)
        sub.open = False
        text = sub.text.take()
        if text is not None:
            actions.append(Emit(MessageEvent(role="assistant", content=text, parent_tool_use_id=sub.tool_call_id)))
        if not (result or text) and reason is not CloseReason.SUBAGENT_ENDED:
            result = f"It ended early: {reason.value}."
        actions.append(FinishSubagent(sub.tool_call_id, status, result or text or "", usage))

    def _close_lane(self, lane: Lane, reason: CloseReason, actions: list[Action]) -> None:
        """Close everything still open in ``lane``: the sub-agents spawned there first (deepest
        first), then its calls, so an Agent call closes after its sub-agent finished."""
        for sub in [s for s in self._subagents.values() if s.lane == lane and s.open]:
            spawning = self._calls.get(sub.tool_call_id)
            if spawning is not None and not spawning.open:
                status = "completed" if spawning.status == "completed" else "error"
            elif reason in (CloseReason.CANCELLED, CloseReason.SUPERSEDED):
                status = "cancelled"
            elif spawning is None and reason in (CloseReason.END_TURN, CloseReason.SUBAGENT_ENDED):
                status = "completed"  # its Agent call was never seen; nothing says it failed
            elif spawning is not None and not spawning.ran:
                status = "cancelled"
            else:
                status = "error"
            self._finish(sub, status, "", None, reason, actions)
        for call in [c for c in self._calls.values() if c.parent == lane and c.open]:
            call.close(closing_status(call.ran), closing_text(call.ran, reason.value))
            if call.ran:
                self._incomplete.append(call.tool_call_id)
            call.changed()
            actions.append(Emit(call.event()))
