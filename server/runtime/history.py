"""Rebuild a native agent's model history from its own stored stream.

Used when a conversation is resumed by a fresh process (after a restart, or a takeover by
another replica): the stream is the truth, so the model sees exactly what it saw before.
A host that began its stream itself keeps these events as it emits them instead
(``ConversationHost.known_history``), so a new conversation's is not read back.
"""

from __future__ import annotations

from typing import Iterable

from ..events import ActionEvent, Event, MessageEvent, ObservationEvent
from ..events.closing import INTERRUPTED
from ..llm.base import ChatMessage, ToolCall

HISTORY_EVENTS = (ActionEvent, ObservationEvent, MessageEvent)
"""The kinds of event the history is made of (every other kind is skipped)."""


def messages_from_events(events: Iterable[Event]) -> list[ChatMessage]:
    """The model's history: user and assistant messages, tool calls grouped by LLM response,
    each followed by its results in call order. A call with no stored result (the process
    died while it ran) gets a result saying so, because every API requires one."""
    messages: list[ChatMessage] = []
    pending: list[ToolCall] = []
    results: dict[str, ObservationEvent] = {}
    group: str | None = None

    def close_group() -> None:
        for call in pending:
            obs = results.get(call.id)
            messages.append(
                ChatMessage(
                    role="tool",
                    tool_call_id=call.id,
                    name=call.name,
                    content=obs.content if obs else INTERRUPTED,
                    is_error=obs.is_error if obs else True,
                )
            )
        pending.clear()
        results.clear()

    for event in events:
        if isinstance(event, ActionEvent):
            if pending and event.llm_response_id != group:
                close_group()
            if not pending:
                group = event.llm_response_id
                messages.append(ChatMessage(role="assistant", content=event.thought or ""))
            call = ToolCall(id=event.tool_call_id, name=event.tool_name, arguments=event.arguments)
            messages[-1].tool_calls.append(call)
            pending.append(call)
        elif isinstance(event, ObservationEvent):
            results[event.tool_call_id] = event
            if all(c.id in results for c in pending):
                close_group()
        elif isinstance(event, MessageEvent) and event.role in ("user", "assistant"):
            if pending:
                close_group()
            messages.append(ChatMessage(role=event.role, content=event.content))
    if pending:
        close_group()
    return messages
