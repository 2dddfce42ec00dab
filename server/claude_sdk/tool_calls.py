"""Claude Code tool calls as taskwire reports them (``ACPToolCallEvent``), and the closing rule.

The closing rule is the one every backend follows: a call the model dropped before it ran (it
was streamed but never reached a complete assistant message) is ``cancelled``; a call that ran
but never returned a result is ``failed``. The content texts are the native backend's, so a
client reads the same words whichever backend ran the call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .actions import Lane
from ..events import ACPToolCallEvent
from taskwire_client.events import ToolCallStatus
from ..events.closing import closing_status, closing_text

SUBAGENT_TOOLS = frozenset({"Agent", "Task"})
"""Claude Code's sub-agent tool: ``Agent`` (``Task`` in older versions)."""

_KINDS = {
    "Bash": "execute", "BashOutput": "execute", "KillShell": "execute",
    "Read": "read", "NotebookRead": "read",
    "Edit": "edit", "MultiEdit": "edit", "Write": "edit", "NotebookEdit": "edit",
    "Grep": "search", "Glob": "search", "LS": "search",
    "WebFetch": "fetch", "WebSearch": "fetch",
    "Agent": "think", "Task": "think", "TodoWrite": "think",
    "ExitPlanMode": "switch_mode",
}
# The input field that best names what a call does, in order of preference.
_TITLE_FIELDS = ("command", "file_path", "notebook_path", "pattern", "url", "query", "description")


@dataclass(slots=True)
class ToolCall:
    """One ``tool_use`` of some lane, from its first streamed byte to its result."""

    id: str
    name: str
    lane: Lane
    input: dict[str, Any] = field(default_factory=dict)
    ran: bool = False
    """It reached a complete assistant message, so Claude Code runs it."""

    @property
    def spawns_subagent(self) -> bool:
        return self.name in SUBAGENT_TOOLS

    def event(
        self,
        status: ToolCallStatus,
        *,
        text: str | None = None,
        raw_output: Any = None,
        is_error: bool | None = None,
    ) -> ACPToolCallEvent:
        """The call's full state (the last event per ``tool_call_id`` wins, so each is whole)."""
        return ACPToolCallEvent(
            tool_call_id=self.id,
            title=title_of(self.name, self.input),
            status=status,
            tool_kind=_KINDS.get(self.name, "other"),
            raw_input=self.input,
            raw_output=raw_output,
            content=text_content(text) if text is not None else None,
            is_error=is_error,
        )

    def closed(self) -> ACPToolCallEvent:
        """The call closed by the closing rule: ``failed`` if it ran, else ``cancelled``."""
        return self.event(closing_status(self.ran), text=closing_text(self.ran), is_error=True)


def title_of(name: str, arguments: dict[str, Any]) -> str:
    """What a person reads for a call: its command, path, pattern... or else the tool's name."""
    for key in _TITLE_FIELDS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip().splitlines()[0][:200]
    return name


def text_content(text: str) -> list[dict[str, Any]]:
    """ACP-shaped content: one text block."""
    return [{"type": "content", "content": {"type": "text", "text": text}}]


def result_text(content: Any) -> str:
    """The text of a ``tool_result``'s content: a string, or a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text", "")) for block in content if isinstance(block, dict) and block.get("type") == "text"
        )
    return ""
