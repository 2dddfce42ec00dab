"""SDK messages built from the ``claude-agent-sdk`` dataclasses, shaped like Claude Code's, and
helpers that read the dispatcher's actions in the domain's words."""

from __future__ import annotations

import itertools
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    StreamEvent,
    TaskNotificationMessage,
    TaskStartedMessage,
    TaskUpdatedMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from taskwire.claude_sdk import ROOT, Action, CountUsage, Emit, Lane, TurnEnded
from taskwire.events import ACPToolCallEvent, Event, MessageEvent, StreamingDeltaEvent
from tests.claude_sdk.watch import call_text

_ids = itertools.count(1)
USAGE = {"input_tokens": 100, "output_tokens": 1, "cache_read_input_tokens": 0}


def _uuid() -> str:
    return f"uuid-{next(_ids)}"


# -- streamed (partial) messages ---------------------------------------------------------------


def stream(event: dict[str, Any], parent: Lane = ROOT) -> StreamEvent:
    return StreamEvent(uuid=_uuid(), session_id="session", event=event, parent_tool_use_id=parent)


def message_start(message_id: str, parent: Lane = ROOT) -> StreamEvent:
    return stream({"type": "message_start", "message": {"id": message_id, "usage": USAGE}}, parent)


def text_start(index: int, parent: Lane = ROOT) -> StreamEvent:
    return stream({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}, parent)


def text_delta(index: int, text: str, parent: Lane = ROOT) -> StreamEvent:
    return stream({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}, parent)


def tool_start(index: int, call_id: str, name: str, parent: Lane = ROOT) -> StreamEvent:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    return stream({"type": "content_block_start", "index": index, "content_block": block}, parent)


def json_delta(index: int, partial: str, parent: Lane = ROOT) -> StreamEvent:
    delta = {"type": "input_json_delta", "partial_json": partial}
    return stream({"type": "content_block_delta", "index": index, "delta": delta}, parent)


def block_stop(index: int, parent: Lane = ROOT) -> StreamEvent:
    return stream({"type": "content_block_stop", "index": index}, parent)


def message_end(parent: Lane = ROOT, stop_reason: str = "end_turn", output_tokens: int = 10) -> list[StreamEvent]:
    return [
        stream({"type": "message_delta", "delta": {"stop_reason": stop_reason},
                "usage": {"output_tokens": output_tokens}}, parent),
        stream({"type": "message_stop"}, parent),
    ]


# -- complete messages -------------------------------------------------------------------------


def text(value: str) -> TextBlock:
    return TextBlock(text=value)


def tool_use(call_id: str, name: str, **arguments: Any) -> ToolUseBlock:
    return ToolUseBlock(id=call_id, name=name, input=arguments)


def tool_result(call_id: str, content: Any, *, is_error: bool = False) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=call_id, content=content, is_error=is_error)


def assistant(*blocks: Any, message_id: str, parent: Lane = ROOT) -> AssistantMessage:
    return AssistantMessage(
        content=list(blocks), model="claude-test", parent_tool_use_id=parent, usage=dict(USAGE),
        message_id=message_id, session_id="session", uuid=_uuid(),
    )


def user(*blocks: Any, parent: Lane = ROOT, tool_use_result: dict[str, Any] | None = None) -> UserMessage:
    content: Any = blocks[0] if len(blocks) == 1 and isinstance(blocks[0], str) else list(blocks)
    return UserMessage(content=content, uuid=_uuid(), parent_tool_use_id=parent, tool_use_result=tool_use_result)


def streamed_call(index: int, block: ToolUseBlock, *, message_id: str, parent: Lane = ROOT) -> list[Any]:
    """A call streamed as block ``index`` of ``message_id`` and completed: Claude Code runs it."""
    return [
        tool_start(index, block.id, block.name, parent),
        assistant(block, message_id=message_id, parent=parent),
        block_stop(index, parent),
    ]


def agent_call(call_id: str, description: str, prompt: str, *, background: bool = False) -> ToolUseBlock:
    return tool_use(call_id, "Agent", description=description, prompt=prompt,
                    subagent_type="general-purpose", run_in_background=background)


def agent_returned(call_id: str, answer: str) -> UserMessage:
    """The main agent's ``Agent`` call answered with a foreground sub-agent's report."""
    report = {"status": "completed", "content": [{"type": "text", "text": answer}]}
    return user(tool_result(call_id, [{"type": "text", "text": f"[Subagent hand-back] {answer}"}]),
                tool_use_result=report)


def agent_launched(call_id: str) -> UserMessage:
    """The main agent's ``Agent`` call answered at once: the sub-agent runs in the background."""
    return user(tool_result(call_id, [{"type": "text", "text": "Async agent launched successfully."}]),
                tool_use_result={"isAsync": True, "status": "async_launched"})


# -- task system messages ----------------------------------------------------------------------


def task_started(call_id: str, task_id: str, description: str) -> TaskStartedMessage:
    data = {"type": "system", "subtype": "task_started", "task_id": task_id, "tool_use_id": call_id,
            "description": description, "subagent_type": "general-purpose", "task_type": "local_agent"}
    return TaskStartedMessage(subtype="task_started", data=data, task_id=task_id, description=description,
                              uuid=_uuid(), session_id="session", tool_use_id=call_id, task_type="local_agent")


def task_updated(task_id: str, status: str) -> TaskUpdatedMessage:
    patch = {"status": status}
    data = {"type": "system", "subtype": "task_updated", "task_id": task_id, "patch": patch}
    return TaskUpdatedMessage(
        subtype="task_updated", data=data, task_id=task_id, patch=patch, status=status  # type: ignore[arg-type]
    )


def task_notification(call_id: str, task_id: str, summary: str, status: str = "completed") -> TaskNotificationMessage:
    usage = {"total_tokens": 500, "tool_uses": 1, "duration_ms": 10}
    data = {"type": "system", "subtype": "task_notification", "task_id": task_id, "tool_use_id": call_id,
            "status": status, "summary": summary, "output_file": "", "usage": usage}
    return TaskNotificationMessage(subtype="task_notification", data=data, task_id=task_id, status=status,  # type: ignore[arg-type]
                                   output_file="", summary=summary, uuid=_uuid(), session_id="session",
                                   tool_use_id=call_id, usage=usage)  # type: ignore[arg-type]


def result(answer: str, prompt_id: str | None, *, is_error: bool = False, subtype: str = "success",
           origin: dict[str, Any] | None = None) -> ResultMessage:
    return ResultMessage(
        subtype=subtype, duration_ms=1, duration_api_ms=1, is_error=is_error, num_turns=1, session_id="session",
        usage={"input_tokens": 300, "output_tokens": 30, "cache_read_input_tokens": 0}, result=answer,
        user_message_uuid=prompt_id, user_message_uuids=[prompt_id] if prompt_id else None, origin=origin,  # type: ignore[arg-type]
    )


# -- reading actions -----------------------------------------------------------------------------


class Transcript:
    """Every action the dispatcher produced, read per lane."""

    def __init__(self) -> None:
        self.actions: list[Action] = []

    def add(self, actions: list[Action]) -> list[Action]:
        self.actions.extend(actions)
        return actions

    def events(self, lane: Lane) -> list[Event]:
        return [a.event for a in self.actions if isinstance(a, Emit) and a.lane == lane]

    def lanes(self) -> set[Lane]:
        return {a.lane for a in self.actions if isinstance(a, Emit)}

    def messages(self, lane: Lane, role: str = "assistant") -> list[str]:
        return [e.content for e in self.events(lane) if isinstance(e, MessageEvent) and e.role == role]

    def deltas(self, lane: Lane) -> str:
        return "".join(e.content for e in self.events(lane) if isinstance(e, StreamingDeltaEvent))

    def statuses(self, lane: Lane, call_id: str) -> list[str]:
        return [e.status for e in self.events(lane) if isinstance(e, ACPToolCallEvent) and e.tool_call_id == call_id]

    def call(self, lane: Lane, call_id: str) -> ACPToolCallEvent:
        """The call as a client keeps it: the last event per ``tool_call_id`` wins."""
        return [e for e in self.events(lane) if isinstance(e, ACPToolCallEvent) and e.tool_call_id == call_id][-1]

    def kinds(self, lane: Lane) -> list[str]:
        return [e.kind for e in self.events(lane)]

    def turn_ends(self) -> list[TurnEnded]:
        return [a for a in self.actions if isinstance(a, TurnEnded)]

    def usage(self, lane: Lane) -> list[CountUsage]:
        return [a for a in self.actions if isinstance(a, CountUsage) and a.lane == lane]


def content_text(event: ACPToolCallEvent) -> str:
    """The text of a call's content blocks."""
    return call_text(event.model_dump())


class DispatchLog(Transcript):
    """A dispatcher and everything it produced."""

    def __init__(self) -> None:
        super().__init__()
        from taskwire.claude_sdk import ClaudeDispatcher

        self.dispatcher = ClaudeDispatcher()

    def begin(self, prompt_id: str = "prompt-1") -> str:
        self.add(self.dispatcher.begin_turn(prompt_id))
        return prompt_id

    def feed(self, *messages: Any) -> None:
        for message in messages:
            self.add(self.dispatcher.feed(message))
