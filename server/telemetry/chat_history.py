"""What each ``chat`` span's request was given, Sans-I/O: a bounded history per conversation.

With content capture on, the span builder feeds this the records it already reads (user and
assistant ``MessageEvent``s, ``ActionEvent`` calls, ``ObservationEvent`` results) and, at a
``usage`` update, asks for ``gen_ai.input.messages``: the usage update is stored before the
response's own records, so the history then is what the model was sent (its system prompt
aside: no stored record holds it, see docs/observability.md).

Bounds: each part is clipped as other captured content is (``clip``); a conversation keeps at
most ``max_chars`` of messages (their JSON), the oldest dropped first; a history that lost its
oldest messages, or began after the conversation did (records from before the server started
are never seen), is ``partial``. A history is freed when its conversation's spans end (a
sub-agent's at its ``SubagentFinishedEvent``); a root's lives on between runs, since its next
request repeats it, among at most ``max_idle`` idle roots.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..events import EventRecord
from .spans import MAX_CONTENT_CHARS, clip

MAX_HISTORY_CHARS = 65_536
"""A conversation's messages kept for its next ``chat`` span, in characters of JSON."""
MAX_IDLE_HISTORIES = 256
"""Root conversations between runs whose history is kept for their next run."""


@dataclass
class _History:
    messages: deque[tuple[dict[str, Any], int]] = field(default_factory=deque)
    """Each message with its size in JSON characters, oldest first."""
    chars: int = 0
    partial: bool = False
    response_id: str | None = None
    """The LLM response the last message's tool calls came from (calls group by response)."""
    calls: list[str] = field(default_factory=list)
    """The ids of that message's calls, whose results are given back in this order."""
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Results of those calls stored so far (in the order they ended), not yet in ``messages``."""
    system: str | None = None
    """The system instructions, as ``gen_ai.system_instructions`` JSON (the run's first usage record names them)."""


class ChatHistory:
    """Per-conversation model input; see the module docstring."""

    def __init__(self, *, max_chars: int = MAX_HISTORY_CHARS, max_idle: int = MAX_IDLE_HISTORIES) -> None:
        self.max_chars = max_chars
        self.max_idle = max_idle
        self._histories: dict[str, _History] = {}
        self._idle: dict[str, None] = {}  # roots between runs, oldest first

    def __len__(self) -> int:
        return len(self._histories)

    def receive(self, record: EventRecord, event: dict[str, Any]) -> None:
        """A record the span builder read (its JSON parsed as ``event``)."""
        kind, conversation_id = record.kind, record.conversation_id
        if conversation_id == record.root_id and conversation_id not in self._histories:
            # Seen from its first record (seq 1), or begun before this server saw it.
            self._histories[conversation_id] = _History(partial=record.seq != 1)
            self.idle(conversation_id)  # until it runs: roots sent messages that never run are bounded too
        if kind == "SubagentStartedEvent":
            self._histories[conversation_id] = _History()  # the first record of its stream
        elif kind == "SubagentFinishedEvent":
            self.forget(conversation_id)
        elif kind == "MessageEvent" and event.get("role") in ("user", "assistant"):
            self.message(conversation_id, str(event["role"]), str(event.get("content", "")))
        elif kind == "ActionEvent":
            self.tool_call(conversation_id, event)
        elif kind == "ObservationEvent":
            self.tool_result(conversation_id, event)

    def running(self, root_id: str) -> None:
        """A root's run started: its history is no longer a candidate for eviction."""
        self._idle.pop(root_id, None)

    def message(self, conversation_id: str, role: str, text: str) -> None:
        """A user or assistant message."""
        self._add(conversation_id, {"role": role, "parts": [{"type": "text", "content": clip(text)}]})

    def tool_call(self, conversation_id: str, event: dict[str, Any]) -> None:
        """An ``ActionEvent``: calls of one LLM response join one assistant message."""
        history = self._get(conversation_id)
        response_id = event.get("llm_response_id")
        part = {
            "type": "tool_call", "id": event.get("tool_call_id"), "name": event.get("tool_name"),
            "arguments": _clipped_json(event.get("arguments") or {}),
        }
        if history.messages and response_id is not None and history.response_id == response_id and not history.results:
            message, size = history.messages.pop()
            history.chars -= size
            message["parts"].append(part)
            self._push(history, message)
            history.calls.append(str(part["id"]))
            return
        self._flush(history)
        parts: list[dict[str, Any]] = []
        if event.get("thought"):
            parts.append({"type": "text", "content": clip(str(event["thought"]))})
        parts.append(part)
        self._push(history, {"role": "assistant", "parts": parts})
        history.response_id, history.calls = response_id, [str(part["id"])]

    def tool_result(self, conversation_id: str, event: dict[str, Any]) -> None:
        """An ``ObservationEvent``: one ``tool`` message per result; the results of a
        response's calls go in once all are in, in call order, as the model gets them."""
        history = self._get(conversation_id)
        content = event.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        call_id = str(event.get("tool_call_id"))
        history.results[call_id] = {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": clip(text)}]}
        if all(c in history.results for c in history.calls):
            self._flush(history)

    def system_instructions(self, conversation_id: str, told: Any) -> str | None:
        """The conversation's system instructions as span JSON; ``told`` is what this request's
        usage record said of them (a run's first names them, the others nothing)."""
        history = self._histories.get(conversation_id)
        if history is None:
            return None
        if isinstance(told, str) and told:
            history.system = json.dumps([{"type": "text", "content": clip(told)}], ensure_ascii=False)
        return history.system

    def input_messages(self, conversation_id: str) -> tuple[str, bool] | None:
        """``gen_ai.input.messages`` for a request made now, and whether it is partial."""
        history = self._histories.get(conversation_id)
        if history is None:
            return None
        self._flush(history)
        return json.dumps([m for m, _ in history.messages], ensure_ascii=False), history.partial

    def forget(self, conversation_id: str) -> None:
        """A sub-agent whose run ended without it finishing: nothing will ask for it again."""
        self._histories.pop(conversation_id, None)

    def idle(self, conversation_id: str) -> None:
        """A root is not running: keep its history for its next run, among ``max_idle``."""
        if conversation_id not in self._histories:
            return
        self._idle[conversation_id] = None
        while len(self._idle) > self.max_idle:
            oldest = next(iter(self._idle))
            del self._idle[oldest]
            self._histories.pop(oldest, None)

    # -- bookkeeping ----------------------------------------------------------------------

    def _get(self, conversation_id: str) -> _History:
        history = self._histories.get(conversation_id)
        if history is None:  # a record of a conversation begun before we saw it
            history = self._histories[conversation_id] = _History(partial=True)
        return history

    def _add(self, conversation_id: str, message: dict[str, Any]) -> None:
        history = self._get(conversation_id)
        self._flush(history)
        history.response_id = None
        self._push(history, message)

    def _flush(self, history: _History) -> None:
        """The results waiting, in call order (any of another call after them)."""
        if not history.results:
            return
        order = {call_id: n for n, call_id in enumerate(history.calls)}
        for call_id in sorted(history.results, key=lambda c: order.get(c, len(order))):
            self._push(history, history.results[call_id])
        history.results.clear()
        history.calls.clear()
        history.response_id = None

    def _push(self, history: _History, message: dict[str, Any]) -> None:
        size = len(json.dumps(message, ensure_ascii=False)) + 2  # with its ", " in the list
        history.messages.append((message, size))
        history.chars += size
        while history.chars > self.max_chars and len(history.messages) > 1:
            _, dropped = history.messages.popleft()
            history.chars -= dropped
            history.partial = True


def _clipped_json(arguments: Any) -> Any:
    """A call's arguments as the model gave them, unless too long: then clipped text."""
    text = json.dumps(arguments, ensure_ascii=False)
    return arguments if len(text) <= MAX_CONTENT_CHARS else clip(text)
