"""A peer's tool calls (``ACPToolCallEvent``: Claude Code over ACP or the SDK) as AG-UI
tool calls.

Each event is the call's whole state as the bridge knows it, sent again on every update, so
the AG-UI call is built up once: ``TOOL_CALL_START`` on first sight; ``TOOL_CALL_ARGS`` and
``TOOL_CALL_END`` once its input is known (a main-agent call streams in with ``{}`` first) or
it moves past ``pending``; ``TOOL_CALL_RESULT`` once, at its first terminal status. Updates
that change nothing AG-UI shows (a new title, ``in_progress``) pass without an event.

A call the peer reported before naming its parent starts in the lane it landed in, and its
arguments stay there (AG-UI checks that an open call's events agree with its opener); its
result, a new message, carries the stamp of the stream that holds it.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from .lanes import Events, Lane, tool_result

TERMINAL = frozenset({"completed", "failed", "cancelled"})

_STARTED, _ENDED, _ANSWERED = 1, 2, 3


class PeerCalls:
    """How far each peer call of the stream has been shown."""

    def __init__(self) -> None:
        self._reached: dict[str, int] = {}
        self._open: dict[str, dict[str, str]] = {}
        """Calls started and not ended, with their lane's attribution."""

    def receive(self, event: Mapping[str, Any], lane: Lane, out: Events) -> None:
        call_id, status = event["tool_call_id"], event.get("status")
        reached = self._reached.get(call_id, 0)
        if reached == 0:
            lane.interrupt(out)  # text after a call is a new message, as the bridge splits it
            name = event.get("title") or event.get("tool_kind") or "tool"
            start: dict[str, Any] = {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name, **lane.tag}
            if event.get("tool_kind"):
                start["metadata"] = {"taskwire": {"tool_kind": event["tool_kind"]}}
            out.append(start)
            reached = _STARTED
            self._open[call_id] = lane.tag
        raw_input = event.get("raw_input")
        if reached == _STARTED and (raw_input or status not in (None, "pending")):
            # A call first reported before the peer named its parent stays where it started:
            # AG-UI cannot move an open call, so its arguments follow their opener's lane.
            tag = self._open.pop(call_id, lane.tag)
            args = raw_input if raw_input is not None else {}
            out.append({"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": json.dumps(args), **tag})
            out.append({"type": "TOOL_CALL_END", "toolCallId": call_id, **tag})
            reached = _ENDED
        if reached == _ENDED and status in TERMINAL:
            taskwire: dict[str, Any] = {"status": status}
            if event.get("title"):
                taskwire["title"] = event["title"]
            if event.get("is_error"):
                taskwire["is_error"] = True
            out.append(tool_result(event["id"], call_id, output_text(event), lane, taskwire))
            reached = _ANSWERED
        self._reached[call_id] = reached

    def close_run(self, out: Events) -> None:
        """The run ends: end the calls whose arguments never came (AG-UI requires it)."""
        for call_id, tag in self._open.items():
            out.append({"type": "TOOL_CALL_END", "toolCallId": call_id, **tag})
            self._reached[call_id] = _ENDED
        self._open = {}


def output_text(event: Mapping[str, Any]) -> str:
    """A peer call's result as text: its content blocks' text, else its raw output."""
    text = _text_of(event.get("content"))
    if text:
        return text
    output = event.get("raw_output")
    if output is None:
        return ""
    return output if isinstance(output, str) else json.dumps(output)


def _text_of(blocks: Any) -> str:
    if isinstance(blocks, list):
        return "\n".join(t for t in (_text_of(b) for b in blocks) if t)
    if isinstance(blocks, dict):
        if blocks.get("type") == "content":
            return _text_of(blocks.get("content"))
        text = blocks.get("text")
        return text if isinstance(text, str) else ""
    return ""
