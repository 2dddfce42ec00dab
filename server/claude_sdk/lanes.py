"""Per-lane state of a Claude Code session: what one agent (main or sub-agent) has in flight.

Nothing here is shared between lanes: the main agent and a sub-agent both number their content
blocks from 0, so streamed blocks are keyed by (message id, block index) inside their lane.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .actions import Lane
from ..events import Usage
from taskwire_client.events import SubagentStatus


@dataclass(slots=True)
class StreamBlock:
    """A content block being streamed: ``text``, ``thinking``, or a ``tool_use`` (by its id)."""

    kind: str
    tool_use_id: str | None = None


class UsageMeter:
    """Token usage per model message. Claude Code reports a message's usage several times (at
    its start, on each completed block, in ``message_delta``); the figures only grow, so each
    message counts once, with the largest of each."""

    _FIELDS = {"input_tokens": "input_tokens", "output_tokens": "output_tokens",
               "cache_read_input_tokens": "cache_read_tokens", "cache_creation_input_tokens": "cache_write_tokens"}

    def __init__(self) -> None:
        self._messages: dict[str, dict[str, int]] = {}
        self.model: str | None = None
        """The model that answered the latest message (what its tokens are priced by)."""

    def record(self, message_id: str | None, usage: Any, model: Any = None) -> None:
        if isinstance(model, str) and model:
            self.model = model
        if not message_id or not isinstance(usage, dict):
            return
        seen = self._messages.setdefault(message_id, {})
        for source, target in self._FIELDS.items():
            value = usage.get(source)
            if isinstance(value, int):
                seen[target] = max(seen.get(target, 0), value)

    @property
    def calls(self) -> int:
        return len(self._messages)

    def total(self) -> Usage:
        usage = Usage(llm_calls=len(self._messages))
        for seen in self._messages.values():
            usage = usage + Usage(**seen)
        return usage

    def reset(self) -> None:
        self._messages.clear()


@dataclass(slots=True)
class LaneState:
    """One lane: the main agent (``id`` ``None``) or the sub-agent spawned by call ``id``."""

    id: Lane
    parent: Lane = None
    """The lane whose call spawned this one."""
    stream_message: str | None = None
    """The message this lane is streaming now (set by ``message_start``)."""
    blocks: dict[tuple[str, int], StreamBlock] = field(default_factory=dict)
    """Blocks being streamed, by (message id, block index)."""
    meter: UsageMeter = field(default_factory=UsageMeter)
    task_id: str | None = None
    """Claude Code's task id for this sub-agent (``task_started``)."""
    prompted: bool = False
    """The sub-agent's prompt was recorded as its first user message."""
    last_text: str = ""
    """The lane's latest complete text: a sub-agent's answer when nothing better is reported."""
    terminal: SubagentStatus | None = None
    """A terminal ``task_updated`` came; the lane finishes at its notification or result."""
    finished: bool = False

    def block(self, index: Any) -> StreamBlock | None:
        if self.stream_message is None or not isinstance(index, int):
            return None
        return self.blocks.get((self.stream_message, index))
