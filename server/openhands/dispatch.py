"""OpenHandsDispatcher: what each driver report means in taskwire's terms. Sans-I/O.

``feed(report)`` takes one ``Report`` (``protocol.py``) and returns actions addressed to a lane:
the main agent (``None``) or the sub-agent spawned by ``task`` call ``id`` (at any depth; the
lane's parent is the lane of the call above it). OpenHands' events become taskwire's own
(``ActionEvent``, ``ObservationEvent``, ``MessageEvent``, ``AgentErrorEvent``); a lane opens at the
first event stamped with it (``StartLane``, under its parent lane) and closes at the driver's
``task_result`` (``FinishLane``, then the parent's ``task`` observation at once, not when the
slowest sibling ends). OpenHands' own, later copy of that observation is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..events import ActionEvent, AgentErrorEvent, Event, MessageEvent, ObservationEvent, Usage
from ..events.closing import closing_status, closing_text
from taskwire_client.events import SubagentStatus
from .protocol import Report

Lane = str | None
ROOT: Lane = None
TASK_TOOL = "task"


@dataclass(frozen=True, slots=True)
class Emit:
    lane: Lane
    event: Event


@dataclass(frozen=True, slots=True)
class StartLane:
    """Start the sub-agent of ``lane`` under ``parent``'s host."""

    lane: str
    parent: Lane
    subagent_type: str
    description: str


@dataclass(frozen=True, slots=True)
class FinishLane:
    """Finish the sub-agent of ``lane`` (its host, under ``parent``'s)."""

    lane: str
    parent: Lane
    status: SubagentStatus
    result: str
    usage: Usage | None


@dataclass(frozen=True, slots=True)
class RunEnded:
    """The driver's run returned: with OpenHands' ``status`` and the main agent's usage so far."""

    status: str
    answer: str | None
    error: str | None
    usage: Usage | None


@dataclass(frozen=True, slots=True)
class Confirm:
    """OpenHands waits for a person on ``actions`` of ``lane`` (confirmation mode); answer
    ``request`` with allowed (every action) or not."""

    lane: Lane
    request: int
    actions: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class AddUsage:
    """One model call of ``lane``'s agent: its tokens and the model (LiteLLM's name, provider first)."""

    lane: Lane
    usage: Usage
    model: str


Action = Emit | StartLane | FinishLane | RunEnded | Confirm | AddUsage

# OpenHands' TaskObservation statuses / stopped runs, as a sub-agent's outcome.
_OUTCOMES: dict[str, SubagentStatus] = {"completed": "completed", "error": "error", "paused": "cancelled"}
_SKIPPED = {"SystemPromptEvent", "PauseEvent", "TokenEvent", "LLMCompletionLogEvent", "HookExecutionEvent",
            "SecurityAnalysisEvent", "ConversationStateUpdateEvent", "Condensation", "CondensationRequest",
            "CondensationSummaryEvent", "InterruptEvent"}


def text_of(content: Any) -> str:
    """The text of OpenHands content: a list of ``{"type": "text", "text"}`` blocks, or a string."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def usage_of(data: Any) -> Usage | None:
    if not isinstance(data, dict):
        return None
    fields = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "llm_calls")
    return Usage(**{k: int(data.get(k) or 0) for k in fields})


@dataclass(slots=True)
class _Call:
    lane: Lane
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


class OpenHandsDispatcher:
    """Turns an OpenHands driver's reports into lane-addressed taskwire actions."""

    def __init__(self) -> None:
        self._open: dict[str, _Call] = {}
        """Calls with an ActionEvent and no result yet, by tool call id."""
        self._lanes: dict[str, Lane] = {}
        """Open sub-agent lanes -> their parent lane."""
        self._answered: set[str] = set()
        """``task`` calls whose result was sent early (OpenHands' own copy is dropped)."""
        self.answer: str | None = None
        self.dropped = 0
        self.ignored = 0

    def lane_open(self, lane: str) -> bool:
        return lane in self._lanes

    def feed(self, report: Report) -> list[Action]:
        data = report.data
        if report.type == "event":
            return self._event(data.get("parent_tool_use_id"), data.get("ancestry") or [], data, data.get("event") or {})
        if report.type == "task_result":
            return self._task_result(data)
        if report.type == "run_end":
            return [RunEnded(str(data.get("status")), self.answer, data.get("error"), usage_of(data.get("usage")))]
        if report.type == "llm_call":
            lane = data.get("parent_tool_use_id")
            usage = usage_of(data.get("usage"))
            if usage is None or (lane is not None and lane not in self._lanes):  # a straggler
                return []
            return [AddUsage(lane, usage, str(data.get("model") or ""))]
        if report.type == "confirm":
            return [Confirm(data.get("parent_tool_use_id"), int(data.get("request") or 0), list(data.get("actions") or []))]
        if report.type == "dropped":
            self.dropped = max(self.dropped, int(data.get("count") or 0))
        elif report.type not in ("ready", "fatal", "started"):  # those two are the driver's (backend's) business
            self.ignored += 1
        return []

    # -- events ---------------------------------------------------------------------------

    def _event(self, lane: Lane, ancestry: list[str], data: dict[str, Any], event: dict[str, Any]) -> list[Action]:
        out: list[Action] = []
        if lane is not None and lane not in self._lanes:
            if lane in self._answered:  # a straggler after the sub-agent ended
                self.ignored += 1
                return out
            parent = ancestry[-2] if len(ancestry) >= 2 else ROOT
            call = self._open.get(lane)
            args = call.arguments if call is not None else {}
            self._lanes[lane] = parent
            out.append(StartLane(lane, parent, str(data.get("subagent_type") or args.get("subagent_type") or "general-purpose"),
                                 str(args.get("description") or data.get("label") or "")))
        kind = event.get("kind")
        if kind == "ActionEvent":
            out.extend(self._action(lane, event))
        elif kind in ("ObservationEvent", "UserRejectObservation", "AgentErrorEvent"):
            out.extend(self._observation(lane, kind, event))
        elif kind == "MessageEvent":
            out.extend(self._message(lane, event))
        elif kind == "ConversationErrorEvent":
            out.append(Emit(lane, AgentErrorEvent(error=str(event.get("detail") or ""), code=str(event.get("code") or "openhands_error"))))
        elif kind not in _SKIPPED:
            self.ignored += 1
        return out

    def _action(self, lane: Lane, event: dict[str, Any]) -> list[Action]:
        action = dict(event.get("action") or {})
        action.pop("kind", None)
        call_id, name = str(event.get("tool_call_id")), str(event.get("tool_name"))
        self._open[call_id] = _Call(lane, name, action)
        thought = text_of(event.get("thought")) or None
        return [Emit(lane, ActionEvent(tool_name=name, tool_call_id=call_id, arguments=action, thought=thought,
                                       llm_response_id=event.get("llm_response_id")))]

    def _observation(self, lane: Lane, kind: str, event: dict[str, Any]) -> list[Action]:
        call_id = str(event.get("tool_call_id"))
        if call_id in self._answered:
            return []
        call = self._open.pop(call_id, None)
        name = str(event.get("tool_name") or (call.name if call else ""))
        out: list[Action] = []
        if call_id in self._lanes:  # a driver without the early result: the sub-agent ends here
            observation = event.get("observation") or {}
            text = text_of(observation.get("content"))
            failed = bool(observation.get("is_error")) or kind != "ObservationEvent"
            status = "cancelled" if "status: paused" in text else ("error" if failed else "completed")
            out.append(FinishLane(call_id, self._lanes.pop(call_id), status, text, None))
        if kind == "AgentErrorEvent":
            text, is_error = str(event.get("error") or ""), True
        elif kind == "UserRejectObservation":
            text, is_error = f"Rejected: {event.get('rejection_reason') or ''}".strip(), True
        else:
            observation = event.get("observation") or {}
            text, is_error = text_of(observation.get("content")), bool(observation.get("is_error"))
            if name == "finish" and lane is ROOT and not is_error:
                self.answer = text
        status = "cancelled" if kind == "UserRejectObservation" else ("failed" if is_error else "completed")
        out.append(Emit(lane, ObservationEvent(tool_name=name, tool_call_id=call_id, content=text, is_error=is_error,
                                               status=status)))
        return out

    def _message(self, lane: Lane, event: dict[str, Any]) -> list[Action]:
        source = event.get("source")
        message = event.get("llm_message") or {}
        text = text_of(message.get("content"))
        if source == "user":
            # The main agent's user messages are taskwire's own, stored when they were sent.
            return [] if lane is ROOT else [Emit(lane, MessageEvent(role="user", source="user", content=text))]
        if lane is ROOT and text:
            self.answer = text
        return [Emit(lane, MessageEvent(role="assistant", content=text))] if text else []

    # -- a task call's end ----------------------------------------------------------------

    def _task_result(self, data: dict[str, Any]) -> list[Action]:
        call_id = str(data.get("tool_call_id"))
        if call_id in self._answered:
            return []
        self._answered.add(call_id)
        call = self._open.pop(call_id, None)
        text, is_error = str(data.get("text") or ""), bool(data.get("is_error"))
        raw = str(data.get("status") or "")
        status: SubagentStatus = _OUTCOMES.get(raw, "error" if is_error else "completed")
        if "status: paused" in text:
            status = "cancelled"
        out: list[Action] = []
        if call_id in self._lanes:
            parent = self._lanes.pop(call_id)
            out.append(FinishLane(call_id, parent, status, text, usage_of(data.get("usage"))))
        lane = call.lane if call is not None else self._parent_of(data)
        out.append(Emit(lane, ObservationEvent(tool_name=TASK_TOOL, tool_call_id=call_id, content=text, is_error=is_error,
                                               status="failed" if is_error else "completed")))
        return out

    def _parent_of(self, data: dict[str, Any]) -> Lane:
        ancestry = data.get("ancestry") or []
        return ancestry[-1] if ancestry else ROOT

    # -- closing --------------------------------------------------------------------------

    def close(self, reason: str, *, status: SubagentStatus = "cancelled") -> list[Action]:
        """Everything still open ends: sub-agents innermost first with ``status``, each open call
        by the closing rule (it ran: ``failed``). After this, the run's late reports are ignored
        up to the next message."""
        out: list[Action] = []
        for call_id, call in list(self._open.items()):
            if call_id in self._lanes:
                continue
            out.append(Emit(call.lane, ObservationEvent(tool_name=call.name, tool_call_id=call_id, is_error=True,
                                                        content=closing_text(True, reason), status=closing_status(True))))
        self._open = {k: v for k, v in self._open.items() if k in self._lanes}
        for lane in sorted(self._lanes, key=self._depth, reverse=True):
            parent = self._lanes[lane]
            out.append(FinishLane(lane, parent, status, reason, None))
            call = self._open.pop(lane, None)
            self._answered.add(lane)
            out.append(Emit(parent, ObservationEvent(tool_name=call.name if call else TASK_TOOL, tool_call_id=lane,
                                                     is_error=True, content=closing_text(True, reason),
                                                     status=closing_status(True))))
        self._lanes.clear()
        return out

    def _depth(self, lane: str) -> int:
        depth, current = 0, self._lanes.get(lane)
        while current is not None:
            depth, current = depth + 1, self._lanes.get(current)
        return depth
