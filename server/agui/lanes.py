"""One stream's text as AG-UI messages: what is open in a *lane* (the root's own stream, or
one sub-agent's) while its model streams.

Token deltas open a text (or reasoning) message and add to it; the record that completes the
answer closes it. A whole ``MessageEvent`` that repeats what the lane streamed since its last
whole message is that stream's end, not new text: the native loop streams a message and then
stores it, the ACP bridge streams segments and stores them joined, the Claude SDK stores each
streamed block. Without deltas (a replay) the whole message becomes one start/content/end.
"""

from __future__ import annotations

from typing import Any

Events = list[dict[str, Any]]


def _squeezed(text: str) -> str:
    return "".join(text.split())


class Lane:
    """What is open in one stream of the tree, and how its events are attributed."""

    __slots__ = ("tag", "text_id", "text", "streamed", "reasoning_id", "response_id", "response_message")

    def __init__(self, subagent_id: str | None) -> None:
        self.tag: dict[str, str] = {"subagentRunId": subagent_id} if subagent_id else {}
        """Merged into every event of the lane: ``subagentRunId`` for a sub-agent, nothing for the root."""
        self.text_id: str | None = None
        """The open streamed text message, if any."""
        self.text = ""
        """What the open text message holds so far."""
        self.streamed: list[str] = []
        """Texts streamed since the lane's last whole message (the open one included)."""
        self.reasoning_id: str | None = None
        self.response_id: str | None = None
        """The ``llm_response_id`` whose calls belong to ``response_message``."""
        self.response_message: str | None = None

    # -- text ------------------------------------------------------------------------------

    def add_text(self, message_id: str, delta: str, out: Events) -> None:
        """A text delta: opens a message (closing reasoning) unless one is open."""
        self.close_reasoning(out)
        if self.text_id is None:
            self.text_id, self.text = message_id, ""
            self.streamed.append("")
            out.append({"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant", **self.tag})
        out.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": self.text_id, "delta": delta, **self.tag})
        self.text += delta
        self.streamed[-1] = self.text

    def close_text(self, out: Events) -> str | None:
        """End the open text message, if any; returns its id."""
        message_id = self.text_id
        if message_id is not None:
            out.append({"type": "TEXT_MESSAGE_END", "messageId": message_id, **self.tag})
            self.text_id, self.text = None, ""
        return message_id

    def whole_text(self, message_id: str, role: str, content: str, out: Events) -> None:
        """A complete message the lane did not stream: start, content, end."""
        out.append({"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": role, **self.tag})
        if content:
            out.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": content, **self.tag})
        out.append({"type": "TEXT_MESSAGE_END", "messageId": message_id, **self.tag})

    def complete_text(self, message_id: str, content: str, out: Events) -> str | None:
        """The lane's stored answer ``content`` (a ``MessageEvent``, or an ``ActionEvent``'s
        thought) arrived: end what streamed it, adding any text the deltas missed; show it
        whole if nothing streamed it. Returns the id of the message that holds it."""
        self.close_reasoning(out)
        streamed, self.streamed = self.streamed, []
        if self.text_id is not None and content.startswith(self.text):
            rest = content[len(self.text) :]
            if rest:
                out.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": self.text_id, "delta": rest, **self.tag})
            return self.close_text(out)
        shown = self.close_text(out)
        if streamed and _squeezed(content) == _squeezed("".join(streamed)):
            return shown  # streamed in segments, stored joined: already on screen
        if not content:
            return shown
        self.whole_text(message_id, "assistant", content, out)
        return message_id

    # -- reasoning -------------------------------------------------------------------------

    def add_reasoning(self, message_id: str, delta: str, out: Events) -> None:
        """A thought delta: opens a reasoning span and message (closing text) unless open."""
        self.close_text(out)
        if self.reasoning_id is None:
            self.reasoning_id = message_id
            out.append({"type": "REASONING_START", "messageId": message_id, **self.tag})
            out.append({"type": "REASONING_MESSAGE_START", "messageId": message_id, "role": "reasoning", **self.tag})
        out.append({"type": "REASONING_MESSAGE_CONTENT", "messageId": self.reasoning_id, "delta": delta, **self.tag})

    def close_reasoning(self, out: Events) -> None:
        message_id = self.reasoning_id
        if message_id is not None:
            out.append({"type": "REASONING_MESSAGE_END", "messageId": message_id, **self.tag})
            out.append({"type": "REASONING_END", "messageId": message_id, **self.tag})
            self.reasoning_id = None

    def interrupt(self, out: Events) -> None:
        """End the open messages: what streams next is a new message (a peer's call came
        between), though the stored answer may still join both."""
        self.close_reasoning(out)
        self.close_text(out)

    def close(self, out: Events) -> None:
        """End everything open in the lane (before its sub-agent or the run ends)."""
        self.interrupt(out)
        self.streamed = []


def tool_result(message_id: str, call_id: str, content: str, lane: Lane, taskwire: dict[str, Any]) -> dict[str, Any]:
    """``TOOL_CALL_RESULT``: a tool message of the lane; ``taskwire`` (status ...) in its metadata."""
    return {
        "type": "TOOL_CALL_RESULT", "messageId": message_id, "toolCallId": call_id, "content": content,
        "role": "tool", **lane.tag, "metadata": {"taskwire": taskwire},
    }
