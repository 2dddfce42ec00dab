"""The nodes of a ``Tree``: messages, tool calls and sub-agents, and how each reads in one line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from taskwire_client.events import PermissionRequestEvent, PermissionResolvedEvent, Usage
from taskwire_client.usage import grown_by, usage_of

SUBAGENT_ENDS = frozenset({"completed", "error", "cancelled"})


@dataclass(eq=False)
class Message:
    """A message (``user``, ``assistant``, ``system``), an agent error (``error``), a model
    call being retried (``retry``: ``retrying in 4 s (429), attempt 2 of 7``), or text still
    streaming in (``draft``)."""

    role: str
    text: str
    owner: Subagent | None = field(default=None, repr=False)
    draft: bool = False

    @property
    def depth(self) -> int:
        """0 for the main agent's steps, one more per sub-agent level."""
        return 0 if self.owner is None else self.owner.depth + 1


@dataclass(eq=False)
class ToolCall:
    """A tool call, its latest status and result, and the sub-agents it spawned."""

    tool_call_id: str
    tool_name: str
    owner: Subagent | None = field(default=None, repr=False)
    arguments: dict[str, Any] = field(default_factory=dict)
    title: str = ""
    """What the call does in a few words: its command, description, path or title."""
    status: str = "in_progress"
    output: str = ""
    """The result as text (empty until there is one)."""
    subagents: list[Subagent] = field(default_factory=list)
    request: PermissionRequestEvent | None = None
    """The permission request the call waits on (``None`` once answered, or never asked)."""
    resolution: PermissionResolvedEvent | None = None
    """How its last permission request ended."""

    @property
    def depth(self) -> int:
        return 0 if self.owner is None else self.owner.depth + 1


@dataclass(eq=False)
class Subagent:
    """A sub-agent and its own steps."""

    subagent_id: str
    parent_tool_use_id: str | None = None
    parent_subagent_id: str | None = None
    subagent_type: str = "sub-agent"
    description: str = ""
    label: str = ""
    """Its per-tree name, as the model knows it: ``task-1``, ``task-1.2``."""
    status: str = "running"
    """``running``, then ``completed``, ``error`` or ``cancelled``."""
    result: str = ""
    usage: Usage | None = None
    """Its own tokens and cost (its sub-agents' are theirs: ``Tree.subtree_usage`` adds them up)."""
    listed_subtree_usage: Usage | None = None  # its subtree's, as the server last listed it
    stop_reason: str | None = None  # the budget that stopped it (``max_tokens`` ...), if one did
    work_state: dict[str, Any] | None = None
    """What it is doing now (``{"state": running|requires_action|idle|unknown, ...}``), once known."""
    cwd: str | None = None
    """Its own folder, when its agent said it is not its parent's."""
    steps: list[Step] = field(default_factory=list)
    call: ToolCall | None = field(default=None, repr=False)
    """The call that spawned it, once that has arrived."""

    @property
    def depth(self) -> int:
        return 1 if self.call is None else self.call.depth + 1

    def update(self, info: dict[str, Any]) -> None:
        """Take what is known of it; its status only moves forward and its usage only grows."""
        for name in ("subagent_type", "description", "label", "result"):
            if info.get(name):
                setattr(self, name, info[name])
        if isinstance(info.get("work_state"), dict):
            self.work_state = info["work_state"]
        if info.get("cwd"):
            self.cwd = info["cwd"]
        if info.get("parent_subagent_id") and not self.parent_subagent_id:
            self.parent_subagent_id = info["parent_subagent_id"]
        if info.get("status") and self.status not in SUBAGENT_ENDS:
            self.status = info["status"]
        usage = usage_of(info.get("usage"))
        if usage is not None and grown_by(usage) >= grown_by(self.usage):
            self.usage = usage
        subtree = usage_of(info.get("subtree_usage"))
        if subtree is not None:
            self.listed_subtree_usage = subtree
        if info.get("stop_reason"):
            self.stop_reason = info["stop_reason"]


Step = Union[Message, ToolCall]
Node = Union[Message, ToolCall, Subagent]


def describe(node: Node) -> str:
    """One line for a node: ``terminal echo hi: completed``, ``task-1 Echo subagent-a: running``."""
    if isinstance(node, Subagent):
        name = " ".join(part for part in (node.label, node.description or node.subagent_id) if part)
        return f"{node.subagent_type} {name}: {node.status}"
    if isinstance(node, ToolCall):
        waits = " (waiting for permission)" if node.request is not None else ""
        return f"{node.tool_name} {node.title}: {node.status}{waits}".replace("  ", " ")
    return f"{node.role}: {node.text.strip()}"


def call_title(arguments: dict[str, Any]) -> str:
    """What a tool call does, in a few words: its command, description, path or message."""
    title = next((arguments.get(k) for k in ("command", "description", "path", "message") if arguments.get(k)), "")
    return str(title)


def _content_text(content: list[Any] | None) -> str:
    texts = []
    for block in content or []:
        inner = block.get("content") if isinstance(block, dict) else None
        for part in (block, inner):
            if isinstance(part, dict) and part.get("type") == "text" and part.get("text"):
                texts.append(str(part["text"]))
    return "\n".join(texts)
