"""One peer tool call as the bridge knows it, merged from raw ``tool_call`` / ``tool_call_update``
payloads.

Raw dicts, not the ``agent-client-protocol`` models: the models turn a status they do not know
(``cancelled``) into ``None`` and drop ``_meta`` keys' meaning, and the bridge needs both.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ..events import ACPToolCallEvent, Usage

log = logging.getLogger(__name__)

PARENT_KEYS = ("parentToolUseId", "parent_tool_use_id", "parentToolCallId", "parent_tool_call_id")
"""Names a peer may give the spawning call's id (Claude Code: ``_meta.claudeCode.parentToolUseId``)."""

AGENT_TOOL_NAMES = frozenset({"Agent", "Task"})
"""Claude Code's sub-agent tool (``Task`` in older versions)."""

TERMINAL = frozenset({"completed", "failed", "cancelled"})

_STATUSES = {
    "pending": "pending",
    "in_progress": "in_progress",
    "completed": "completed",
    "failed": "failed",
    "cancelled": "cancelled",
    # Not in ACP's enum, but peers send them; the package's models would turn them into None.
    "canceled": "cancelled",
    "error": "failed",
}


def _claude_meta(update: dict[str, Any]) -> dict[str, Any]:
    meta = update.get("_meta")
    claude = meta.get("claudeCode") if isinstance(meta, dict) else None
    return claude if isinstance(claude, dict) else {}


def parent_of(update: dict[str, Any]) -> str | None:
    """The spawning call's id a payload names, if any: ``_meta.claudeCode``, then ``_meta``, then
    the payload itself, under any of ``PARENT_KEYS``."""
    meta = update.get("_meta")
    for source in (_claude_meta(update), meta if isinstance(meta, dict) else {}, update):
        for key in PARENT_KEYS:
            value = source.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def text_of(blocks: Any) -> str:
    """The text of ACP content: a text block, a list of blocks, or tool-call content wrappers."""
    if isinstance(blocks, str):
        return blocks
    if isinstance(blocks, dict):
        if blocks.get("type") == "content":
            return text_of(blocks.get("content"))
        text = blocks.get("text")
        return text if blocks.get("type") == "text" and isinstance(text, str) else ""
    if isinstance(blocks, list):
        return "\n".join(t for t in (text_of(b) for b in blocks) if t)
    return ""


def text_block(text: str) -> dict[str, Any]:
    """Tool-call content holding ``text``, in ACP's shape."""
    return {"type": "content", "content": {"type": "text", "text": text}}


@dataclass(slots=True)
class ToolCallState:
    """What the bridge knows of one peer tool call. Each update merges into it; each emitted
    ``ACPToolCallEvent`` is the whole state, so the last event per call tells everything."""

    tool_call_id: str
    title: str | None = None
    status: str | None = None
    tool_kind: str | None = None
    raw_input: Any = None
    raw_output: Any = None
    content: list[Any] | None = None
    tool_name: str | None = None
    """The peer's own tool name (``_meta.claudeCode.toolName``: ``Bash``, ``Agent`` ...)."""
    tool_response: Any = None
    """The peer's structured result (``_meta.claudeCode.toolResponse``), when it sent one."""
    parent: str | None = None
    """The spawning call, remembered from the first update that named it."""
    ran: bool = False
    """Evidence that the call ran: ``in_progress``, a result, or (an Agent call) sub-agent work."""
    last_shown: tuple[Any, ...] | None = field(default=None, repr=False)

    @property
    def open(self) -> bool:
        return self.status not in TERMINAL

    @property
    def is_agent_call(self) -> bool:
        """Whether this call spawns a sub-agent (Claude Code's ``Agent``; a ``Task``-titled
        ``think`` call, as claude-agent-acp announces one; or input naming a ``subagent_type``)."""
        if self.tool_name in AGENT_TOOL_NAMES:
            return True
        if self.title == "Task" and self.tool_kind == "think":
            return True
        return isinstance(self.raw_input, dict) and "subagent_type" in self.raw_input

    def merge(self, update: dict[str, Any]) -> None:
        """Fold one ``tool_call`` / ``tool_call_update`` payload (or a permission request's
        ``toolCall``) in. Absent fields keep their value; ``content`` is replaced, as ACP says."""
        if isinstance(update.get("title"), str):
            self.title = update["title"]
        if isinstance(update.get("kind"), str):
            self.tool_kind = update["kind"]
        for key, attr in (("rawInput", "raw_input"), ("rawOutput", "raw_output")):
            if key in update:
                setattr(self, attr, update[key])
        if isinstance(update.get("content"), list):
            self.content = update["content"]
        claude = _claude_meta(update)
        if isinstance(claude.get("toolName"), str):
            self.tool_name = claude["toolName"]
        if "toolResponse" in claude:
            self.tool_response = claude["toolResponse"]
            self.ran = True
        if self.parent is None:
            self.parent = parent_of(update)
        status = update.get("status")
        if isinstance(status, str):
            known = _STATUSES.get(status)
            if known is None:
                log.info("tool call %s: unknown status %r kept as %r", self.tool_call_id, status, self.status)
            else:
                self.status = known
        if self.status in ("in_progress", "completed", "failed"):
            self.ran = True

    def close(self, status: str, note: str) -> None:
        """End the call on the bridge's side (the peer never did): ``cancelled`` or ``failed``,
        with ``note`` appended to its content."""
        self.status = status
        self.content = [*(self.content or []), text_block(note)]

    def event(self) -> ACPToolCallEvent:
        """The call's whole state as an event, stamped with its spawning call when known."""
        return ACPToolCallEvent(
            tool_call_id=self.tool_call_id,
            title=self.title,
            status=self.status,  # type: ignore[arg-type]
            tool_kind=self.tool_kind,
            raw_input=self.raw_input,
            raw_output=self.raw_output,
            content=self.content,
            is_error=None if self.open else self.status != "completed",
            parent_tool_use_id=self.parent,
        )

    def changed(self) -> bool:
        """Whether what an event would show differs from the last event shown; remembers it.
        (Updates that only carry ``_meta`` would otherwise repeat the same event.)"""
        shown = (self.title, self.status, self.tool_kind, self.raw_input, self.raw_output, self.content, self.parent)
        if shown == self.last_shown:
            return False
        self.last_shown = shown
        return True

    # -- an Agent call's sub-agent ----------------------------------------------------------

    @property
    def subagent_prompt(self) -> str | None:
        prompt = self.raw_input.get("prompt") if isinstance(self.raw_input, dict) else None
        return prompt if isinstance(prompt, str) and prompt else None

    @property
    def subagent_type(self) -> str:
        kind = self.raw_input.get("subagent_type") if isinstance(self.raw_input, dict) else None
        return kind if isinstance(kind, str) and kind else "general-purpose"

    @property
    def description(self) -> str:
        described = self.raw_input.get("description") if isinstance(self.raw_input, dict) else None
        if isinstance(described, str) and described:
            return described
        return self.title if self.title and self.title != "Task" else ""

    def result_text(self) -> str:
        """The sub-agent's answer as its Agent call reports it: the call's text content, else
        the text of its raw output or of the peer's structured result."""
        for source in (self.content, self.raw_output, _response_content(self.tool_response)):
            text = text_of(source)
            if text:
                return text
        return ""

    def subagent_usage(self) -> Usage | None:
        """Tokens the sub-agent used, when the peer's structured result says (Claude Code does)."""
        usage = self.tool_response.get("usage") if isinstance(self.tool_response, dict) else None
        if not isinstance(usage, dict):
            return None
        return Usage(
            input_tokens=_int(usage.get("input_tokens")),
            output_tokens=_int(usage.get("output_tokens")),
            cache_read_tokens=_int(usage.get("cache_read_input_tokens")),
        )


def _response_content(response: Any) -> Any:
    return response.get("content") if isinstance(response, dict) else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0
