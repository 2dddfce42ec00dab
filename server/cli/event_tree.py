"""A conversation's ``Tree`` (``server.client``) drawn for the terminal with ``rich``: the main
agent's steps in order, each tool call holding the sub-agents it spawned, recursively."""

from __future__ import annotations

from rich.text import Text
from rich.tree import Tree as RichTree

from server.client import Message, Subagent, ToolCall, Tree
from server.client.tree import SUBAGENT_ENDS, Step
from server.events import Usage

_CALL_MARKS = {
    "pending": ("·", "dim"),
    "in_progress": ("…", "yellow"),
    "completed": ("✓", "green"),
    "failed": ("✗", "red"),
    "cancelled": ("⊘", "dim"),
}
_SUBAGENT_STYLES = {"running": "yellow", "completed": "green", "error": "red", "cancelled": "dim"}
_QUIET_TOOLS = frozenset({"finish", "think", "task"})
"""Tools whose result is said elsewhere (the final answer, the sub-agent's card)."""


def usage_text(usage: Usage | None) -> str:
    """``12 in / 4 out tokens``, or nothing before any was used."""
    if usage is None or usage.input_tokens + usage.output_tokens + usage.llm_calls <= 0:
        return ""
    return f"{usage.input_tokens} in / {usage.output_tokens} out tokens"


def last_line(text: str | None, width: int = 80) -> str:
    """The last non-empty line of a tool's output, cut to ``width``."""
    lines = (text or "").strip().splitlines()
    return lines[-1][:width] if lines else ""


def render(tree: Tree, *, live: bool = False, max_steps: int | None = None) -> RichTree:
    """The whole tree; ``live`` folds finished sub-agents into one line each, and ``max_steps``
    keeps only the main agent's latest steps (a terminal shows the top of what does not fit,
    and the latest steps are at the bottom)."""
    head = Text.assemble(
        ("conversation ", "bold"), (tree.conversation_id, "bold"), "  ",
        (tree.status, _status_style(tree.status)), "  ",
        (f"{tree.events} events", "dim"), "  ", (usage_text(tree.usage), "dim"),
    )
    if tree.pending_permissions:
        head.append(f"  ⏸ {len(tree.pending_permissions)} waiting for permission", style="bold magenta")
    root = RichTree(head, guide_style="dim")
    steps = tree.steps
    if max_steps is not None and len(steps) > max_steps:
        root.add(Text(f"… {len(steps) - max_steps} earlier steps", style="dim"))
        steps = steps[-max_steps:]
    _draw_steps(root, steps, live)
    for sub in list(tree.waiting):
        _draw_subagent(root, sub, live)
    return root


def _draw_steps(node: RichTree, steps: list[Step], live: bool) -> None:
    for step in list(steps):
        if isinstance(step, Message):
            who, style = _who(step)
            node.add(Text.assemble((f"{who}: ", "dim"), (step.text.strip(), style)))
            continue
        mark, style = _CALL_MARKS.get(step.status, ("?", ""))
        label = Text.assemble((f"{mark} ", style), (step.tool_name, "bold"), " ", step.title)
        output = last_line(step.output) if step.tool_name not in _QUIET_TOOLS else ""
        if step.request is not None:
            label.append(f"  ⏸ waiting for permission: request {step.request.request_id}", style="bold magenta")
        elif output:
            label.append(f"  → {output}", style="dim")
        branch = node.add(label)
        for sub in list(step.subagents):
            _draw_subagent(branch, sub, live)


def _draw_subagent(node: RichTree, sub: Subagent, live: bool) -> None:
    shown = "failed" if sub.status == "error" else sub.status
    label = Text.assemble(
        ("◆ ", "cyan"), (sub.subagent_type, "bold cyan"), " ",
        (sub.label + " " if sub.label else "", "dim"), sub.description or sub.subagent_id[:8], "  ",
        (shown, _SUBAGENT_STYLES.get(sub.status, "")), "  ", (usage_text(sub.usage), "dim"),
    )
    if sub.work_state and sub.work_state.get("state") == "requires_action":
        label.append("  ⏸ waiting for you", style="bold magenta")
    elif sub.work_state and sub.status not in SUBAGENT_ENDS and sub.work_state.get("state") != "running":
        label.append(f"  [{sub.work_state['state']}]", style="dim")
    if sub.cwd:
        label.append(f"  in {sub.cwd}", style="dim")
    if live and sub.status in SUBAGENT_ENDS:
        label.append(f"  ({len(sub.steps)} steps)", style="dim")
        node.add(label)
        return
    _draw_steps(node.add(label, guide_style="cyan"), sub.steps, live)


def _who(message: Message) -> tuple[str, str]:
    if message.draft:
        return "Agent", "dim"
    if message.role == "user":
        return ("You" if message.owner is None else "Task prompt"), ""
    if message.role == "error":
        return "Error", "red"
    return ("System" if message.role == "system" else "Agent"), ""


def _status_style(status: str) -> str:
    return {"running": "yellow", "finished": "green", "error": "red"}.get(status, "dim")
