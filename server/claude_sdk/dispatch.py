"""ClaudeDispatcher: the one chokepoint every Claude Agent SDK message goes through.

Sans-I/O: ``feed(message)`` takes one SDK message object (``AssistantMessage``,
``StreamEvent``, ``TaskStartedMessage`` ...) and returns the actions it implies, each addressed
to a lane (``actions.py``). It reads ``parent_tool_use_id`` before anything else: a message that
names a parent is a sub-agent's (a sidechain) and only ever touches that sub-agent's lane; no
main-agent state (its turn, its text, its calls, its block indexes) is reachable from there.

It is responsible for:

- lanes: a sub-agent's lane opens at the first sign of it (its ``Agent`` call, ``task_started``,
  or a message naming it) with a ``SubagentStartedEvent``, and closes once, with a
  ``SubagentFinishedEvent`` carrying its usage, at ``task_notification`` or the call's result;
- tool calls by ``tool_use`` id, streamed ``pending``, ``in_progress`` once their assistant
  message is complete, ``completed``/``failed`` at their result, or closed by the closing rule;
- the prompt turn: ``begin_turn(prompt_id)`` opens it; only the ``ResultMessage`` answering that
  prompt ends it (``TurnEnded``). Nothing else creates a turn: a sub-agent message after the
  result is recorded in its lane and the driver waits for nothing.

After ``interrupt()`` the main agent's remaining output of that turn is ignored up to its
result. ``stop()`` closes everything when the session ends.
"""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    ServerToolResultBlock,
    ServerToolUseBlock,
    StreamEvent,
    TaskNotificationMessage,
    TaskStartedMessage,
    TaskUpdatedMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from .actions import ROOT, Action, CountUsage, Emit, Lane, TurnEnded
from .lanes import LaneState, StreamBlock
from .results import TurnCosts, answers_prompt, result_usage
from .tool_calls import ToolCall, result_text
from ..events.closing import closing_text
from ..events import LLMCall, MessageEvent, StreamingDeltaEvent, SubagentFinishedEvent, SubagentStartedEvent
from ..pricing import priced_call
from taskwire_client.events import SubagentStatus

# Claude Code's task and Agent-result statuses, as a taskwire sub-agent's outcome.
_OUTCOMES: dict[str, SubagentStatus] = {
    "completed": "completed", "failed": "error", "error": "error",
    "stopped": "cancelled", "killed": "cancelled", "cancelled": "cancelled",
}
_CONTENT = (StreamEvent, AssistantMessage, UserMessage)


class ClaudeDispatcher:
    """Turns a Claude Code session's SDK messages into lane-addressed taskwire actions."""

    def __init__(self) -> None:
        self._lanes: dict[Lane, LaneState] = {ROOT: LaneState(ROOT)}
        self._calls: dict[str, ToolCall] = {}
        """Calls in flight, by ``tool_use`` id (ids are unique across lanes; block indexes are not)."""
        self._closed: set[str] = set()
        self._tasks: dict[str, str] = {}
        """Claude Code task id -> the lane of the sub-agent it runs."""
        self._prompt_id: str | None = None
        self.draining = False
        """An interrupted turn's output is still arriving; the main agent's is ignored until its result."""
        self.ignored = 0
        """Messages that implied nothing (stale, unknown call, finished lane), for diagnostics."""
        self._costs = TurnCosts()

    # -- the driver's side ----------------------------------------------------------------

    @property
    def turn_active(self) -> bool:
        return self._prompt_id is not None

    def task_id(self, lane: Lane) -> str | None:
        """Claude Code's task id for the sub-agent of ``lane`` (known once ``task_started`` came)."""
        state = self._lanes.get(lane)
        return state.task_id if state is not None else None

    def lane_asking(self, tool_use_id: str | None, agent_id: str | None) -> tuple[bool, Lane]:
        """Where a ``can_use_tool`` call comes from: ``(True, lane)`` of the call ``tool_use_id``
        once ``feed`` saw it; before that ``(False, lane)`` of the sub-agent whose task is
        ``agent_id``, or ``ROOT``."""
        call = self._calls.get(tool_use_id or "")
        if call is not None:
            return True, call.lane
        task_lane = self._tasks.get(agent_id or "")
        return False, task_lane if task_lane is not None else ROOT

    def permission_wait(self, tool_use_id: str | None, waiting: bool) -> list[Action]:
        """A call waits for a person's answer (``pending``: it has not run yet, so the closing
        rule cancels it), or was allowed and runs (``in_progress``)."""
        call = self._calls.get(tool_use_id or "")
        if call is None:
            return []
        call.ran = not waiting
        return [Emit(call.lane, call.event("pending" if waiting else "in_progress"))]

    def parent_lane(self, lane: Lane) -> Lane:
        """The lane whose call spawned ``lane`` (``ROOT`` for a sub-agent of the main agent)."""
        state = self._lanes.get(lane)
        return state.parent if state is not None else ROOT

    def begin_turn(self, prompt_id: str) -> list[Action]:
        """The driver is sending a prompt (with ``uuid`` ``prompt_id``); its result ends the turn."""
        if self._prompt_id is not None:
            raise RuntimeError("a turn is already running")
        self._prompt_id = prompt_id
        self.draining = False
        return []

    def interrupt(self) -> list[Action]:
        """The driver interrupted the turn: close the main agent's calls in flight (dropped ones
        ``cancelled``, ones that ran ``failed``) and the sub-agents they spawned."""
        out: list[Action] = []
        self._close_calls(ROOT, out, interrupted=True)
        self._reset_stream(self._lanes[ROOT])
        self._prompt_id = None
        self.draining = True
        return out

    def stop(self, reason: str, *, code: str | None = None) -> list[Action]:
        """The session is over (closed, or Claude Code exited): close every call and sub-agent.
        With ``code`` it failed: sub-agents end as ``error`` and a running turn fails."""
        out: list[Action] = []
        self._close_calls(ROOT, out, interrupted=code is None)
        for lane in list(self._lanes.values()):
            if lane.id is not ROOT and not lane.finished:
                self._finish_lane(lane, "error" if code else "cancelled", reason, out)
        if self._prompt_id is not None:
            self._prompt_id = None
            out.append(TurnEnded(None, error=reason, code=code or "claude_sdk_stopped"))
        return out

    # -- the chokepoint -------------------------------------------------------------------

    def feed(self, message: Any) -> list[Action]:
        """Everything one SDK message implies. Sub-agent messages only touch their own lane."""
        parent = getattr(message, "parent_tool_use_id", None)
        out: list[Action] = []
        if parent is not None:
            self._sidechain(parent, message, out)
        elif isinstance(message, (TaskStartedMessage, TaskUpdatedMessage, TaskNotificationMessage)):
            self._task(message, out)
        elif isinstance(message, ResultMessage):
            self._result(message, out)
        elif isinstance(message, _CONTENT):
            if self.draining:
                self.ignored += 1
            else:
                self._content(self._lanes[ROOT], message, out)
        # Anything else (init, status, rate limits, task_progress, hooks) shows nothing.
        return out

    def _sidechain(self, lane_id: str, message: Any, out: list[Action]) -> None:
        lane = self._lanes.get(lane_id) or self._start_lane(lane_id, out)
        if lane.finished or not isinstance(message, _CONTENT):
            self.ignored += 1
            return
        self._content(lane, message, out)

    def _content(self, lane: LaneState, message: Any, out: list[Action]) -> None:
        if isinstance(message, StreamEvent):
            self._stream(lane, message.event, out)
        elif isinstance(message, AssistantMessage):
            self._assistant(lane, message, out)
        else:
            self._user(lane, message, out)

    # -- streamed content (partial messages) -----------------------------------------------

    def _stream(self, lane: LaneState, event: dict[str, Any], out: list[Action]) -> None:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            lane.stream_message = message.get("id") or "unnamed"
            lane.meter.record(lane.stream_message, message.get("usage"), message.get("model"))
        elif kind == "content_block_start":
            self._block_start(lane, event, out)
        elif kind == "content_block_delta":
            self._block_delta(lane, event, out)
        elif kind == "content_block_stop" and lane.stream_message is not None:
            lane.blocks.pop((lane.stream_message, event.get("index")), None)  # type: ignore[arg-type]
        elif kind == "message_delta":
            lane.meter.record(lane.stream_message, event.get("usage"))
        elif kind == "message_stop":
            self._reset_stream(lane)

    def _block_start(self, lane: LaneState, event: dict[str, Any], out: list[Action]) -> None:
        index, block = event.get("index"), event.get("content_block") or {}
        if lane.stream_message is None or not isinstance(index, int):
            return
        state = StreamBlock(kind=str(block.get("type", "")))
        call_id = block.get("id")
        if state.kind in ("tool_use", "server_tool_use") and isinstance(call_id, str):
            state.tool_use_id = call_id
            if call_id not in self._calls and call_id not in self._closed:
                call = self._calls[call_id] = ToolCall(call_id, str(block.get("name", "")), lane.id)
                out.append(Emit(lane.id, call.event("pending")))
        elif state.kind == "text" and block.get("text"):
            out.append(Emit(lane.id, StreamingDeltaEvent(content=block["text"])))
        lane.blocks[(lane.stream_message, index)] = state

    def _block_delta(self, lane: LaneState, event: dict[str, Any], out: list[Action]) -> None:
        state, delta = lane.block(event.get("index")), event.get("delta") or {}
        if state is None:
            return
        if state.kind == "text" and delta.get("type") == "text_delta" and delta.get("text"):
            out.append(Emit(lane.id, StreamingDeltaEvent(content=delta["text"])))
        elif state.kind == "thinking" and delta.get("type") == "thinking_delta" and delta.get("thinking"):
            out.append(Emit(lane.id, StreamingDeltaEvent(content=delta["thinking"], channel="thought")))
        # input_json_delta: the call's input arrives whole with its assistant message.

    @staticmethod
    def _reset_stream(lane: LaneState) -> None:
        lane.blocks.clear()
        lane.stream_message = None

    # -- complete messages -----------------------------------------------------------------

    def _assistant(self, lane: LaneState, message: AssistantMessage, out: list[Action]) -> None:
        lane.meter.record(message.message_id, message.usage, message.model)
        for block in message.content:
            if isinstance(block, TextBlock) and block.text:
                lane.last_text = block.text
                out.append(Emit(lane.id, MessageEvent(role="assistant", content=block.text)))
            elif isinstance(block, (ToolUseBlock, ServerToolUseBlock)):
                self._call_complete(lane, block, out)
            elif isinstance(block, (ToolResultBlock, ServerToolResultBlock)):
                self._call_result(block, None, out)

    def _call_complete(self, lane: LaneState, block: ToolUseBlock | ServerToolUseBlock, out: list[Action]) -> None:
        # The call reached a complete assistant message: Claude Code runs it.
        if block.id in self._closed:
            return
        call = self._calls.get(block.id)
        if call is None:
            call = self._calls[block.id] = ToolCall(block.id, block.name, lane.id)
        call.name, call.input, call.ran = block.name, dict(block.input or {}), True
        out.append(Emit(call.lane, call.event("in_progress")))
        if call.spawns_subagent and call.id not in self._lanes:
            self._start_lane(call.id, out)

    def _user(self, lane: LaneState, message: UserMessage, out: list[Action]) -> None:
        content = message.content
        blocks = [TextBlock(text=content)] if isinstance(content, str) else content
        texts = [b.text for b in blocks if isinstance(b, TextBlock)]
        if texts and lane.id is not ROOT and not lane.prompted:
            # A sub-agent's first user message is its prompt. (The main agent's prompts are the
            # runtime's to record.)
            lane.prompted = True
            out.append(Emit(lane.id, MessageEvent(role="user", source="user", content="\n".join(texts))))
        results = [b for b in blocks if isinstance(b, ToolResultBlock)]
        for block in results:
            self._call_result(block, message.tool_use_result if len(results) == 1 else None, out)

    def _call_result(self, block: ToolResultBlock | ServerToolResultBlock, report: Any, out: list[Action]) -> None:
        call = self._calls.pop(block.tool_use_id, None)
        if call is None:
            self.ignored += 1  # unknown, or already closed by the closing rule
            return
        self._closed.add(call.id)
        failed = bool(getattr(block, "is_error", None))
        text = result_text(block.content)
        raw_output = report if report is not None else block.content
        out.append(Emit(call.lane, call.event("failed" if failed else "completed", text=text,
                                              raw_output=raw_output, is_error=failed)))
        if call.spawns_subagent:
            self._agent_returned(call, report if isinstance(report, dict) else {}, failed, text, out)

    def _agent_returned(self, call: ToolCall, report: dict[str, Any], failed: bool, text: str, out: list[Action]) -> None:
        lane = self._lanes.get(call.id)
        if lane is None or lane.finished:
            return
        if report.get("status") == "async_launched" or report.get("isAsync"):
            return  # it goes on in the background; its task_notification ends it
        status = "error" if failed else _OUTCOMES.get(str(report.get("status")), "completed")
        self._finish_lane(lane, status, result_text(report.get("content")) or lane.last_text or text, out)

    # -- sub-agent lanes and tasks ---------------------------------------------------------

    def _start_lane(self, lane_id: str, out: list[Action], *, subagent_type: Any = None,
                    description: Any = None) -> LaneState:
        call = self._calls.get(lane_id)
        arguments = call.input if call is not None else {}
        lane = self._lanes[lane_id] = LaneState(lane_id, parent=call.lane if call is not None else ROOT)
        started = SubagentStartedEvent(
            subagent_type=str(subagent_type or arguments.get("subagent_type") or "general-purpose"),
            description=str(description or arguments.get("description") or ""),
        )
        out.append(Emit(lane_id, started))
        return lane

    def _task(self, message: Any, out: list[Action]) -> None:
        if isinstance(message, TaskStartedMessage):
            lane_id = message.tool_use_id
            if not lane_id or not self._runs_subagent(lane_id, message.task_type):
                return  # a background shell or the like, not a sub-agent
            lane = self._lanes.get(lane_id) or self._start_lane(
                lane_id, out, subagent_type=message.data.get("subagent_type"), description=message.description
            )
            lane.task_id = message.task_id
            self._tasks[message.task_id] = lane_id
            return
        lane = self._task_lane(message.task_id, getattr(message, "tool_use_id", None))
        if lane is None or lane.finished:
            return
        if isinstance(message, TaskNotificationMessage):
            self._finish_lane(lane, _OUTCOMES.get(message.status, "completed"), message.summary or lane.last_text, out)
        elif message.status == "killed":
            # A stopped task may get no notification at all.
            self._finish_lane(lane, "cancelled", lane.last_text or "stopped", out)
        elif message.status in _OUTCOMES:
            lane.terminal = _OUTCOMES[message.status]

    def _runs_subagent(self, lane_id: str, task_type: str | None) -> bool:
        call = self._calls.get(lane_id)
        if call is not None:
            return call.spawns_subagent
        return lane_id in self._lanes or task_type is None or "agent" in task_type

    def _task_lane(self, task_id: str, tool_use_id: str | None) -> LaneState | None:
        lane_id = tool_use_id if tool_use_id in self._lanes else self._tasks.get(task_id)
        return self._lanes.get(lane_id) if lane_id is not None else None

    def _finish_lane(self, lane: LaneState, status: SubagentStatus, result: str, out: list[Action]) -> None:
        if lane.finished or lane.id is ROOT:
            return
        for child in list(self._lanes.values()):
            if child.parent == lane.id and child.id is not ROOT:
                self._finish_lane(child, "cancelled", "ended with the sub-agent that spawned it", out)
        self._close_calls(lane.id, out, interrupted=status == "cancelled")
        lane.finished = True
        # Claude Code reports no cost per sub-agent: its tokens are priced by the table.
        usage, call = priced_call(lane.meter.total(), LLMCall(model=lane.meter.model, provider="anthropic"))
        if usage.llm_calls:
            self._costs.subagent_counted(usage)
            out.append(CountUsage(lane.id, usage, call))
        out.append(Emit(lane.id, SubagentFinishedEvent(status=status, result=result, usage=usage)))  # type: ignore[arg-type]

    def _close_calls(self, lane_id: Lane, out: list[Action], *, interrupted: bool) -> list[ToolCall]:
        """The closing rule for ``lane_id``'s calls in flight; returns those that ran."""
        ran: list[ToolCall] = []
        for call in [c for c in self._calls.values() if c.lane == lane_id]:
            del self._calls[call.id]
            self._closed.add(call.id)
            out.append(Emit(call.lane, call.closed()))
            if call.ran:
                ran.append(call)
            lane = self._lanes.get(call.id)
            if call.spawns_subagent and lane is not None:
                status: SubagentStatus = "error" if call.ran and not interrupted else "cancelled"
                self._finish_lane(lane, status, closing_text(call.ran), out)
        return ran

    # -- the end of a turn -----------------------------------------------------------------

    def _result(self, message: ResultMessage, out: list[Action]) -> None:
        root = self._lanes[ROOT]
        usage = result_usage(message.usage, root.meter.calls) or root.meter.total()
        root.meter.reset()
        usage, call = self._costs.main_turn(usage, LLMCall(model=root.meter.model, provider="anthropic"),
                                            message.total_cost_usd)
        if usage.llm_calls or usage.input_tokens or usage.output_tokens:
            out.append(CountUsage(ROOT, usage, call))
        if self._prompt_id is None and self.draining:
            self.draining = False  # the interrupted turn's result: it is over
            return
        ours = self._prompt_id is not None and answers_prompt(message, self._prompt_id)
        if self._prompt_id is not None and not ours:
            self.ignored += 1  # an earlier or injected turn's result; ours goes on
            return
        ran = self._close_calls(ROOT, out, interrupted=False)
        for lane in list(self._lanes.values()):
            if lane.terminal is not None and not lane.finished:
                self._finish_lane(lane, lane.terminal, lane.last_text, out)
        if not ours:
            return  # a turn Claude Code started itself (a background hand-back): nobody waits
        self._prompt_id = None
        if message.is_error:
            code = message.subtype if message.subtype.startswith("error") else "claude_sdk_error"
            detail = "; ".join(message.errors or []) or message.result or f"Claude Code ended the turn: {message.subtype}"
            out.append(TurnEnded(None, error=detail, code=code))
        elif ran:
            ids = ", ".join(call.id for call in ran)
            out.append(TurnEnded(None, error=f"the turn ended with tool calls that ran but returned no result: {ids}",
                                 code="incomplete_tool_call"))
        else:
            out.append(TurnEnded(message.result if isinstance(message.result, str) else root.last_text))

