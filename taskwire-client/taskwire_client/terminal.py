"""A conversation's ``Tree`` drawn for a terminal: the main agent's steps in order, each tool
call holding the sub-agents it spawned, recursively.

Plain text with box-drawing guides, styled with ANSI codes only on a terminal. No drawing
library: the client depends on an HTTP client, a WebSocket client and pydantic, nothing more,
so it installs light into someone else's application.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from typing import IO

from taskwire_client.events import Usage
from taskwire_client.tree import SUBAGENT_ENDS, Message, Step, Subagent, Tree

_SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "magenta": "35", "cyan": "36"}

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


def styled(text: str, style: str = "", *, color: bool) -> str:
    """``text`` in ``style`` (space-separated names: ``bold red``) when ``color``, else as is."""
    codes = [_SGR[name] for name in style.split() if name in _SGR]
    return f"\x1b[{';'.join(codes)}m{text}\x1b[0m" if color and codes and text else text


@dataclass
class Label:
    """One line of a tree: pieces of text, each with its style."""

    pieces: list[tuple[str, str]] = field(default_factory=list)

    def add(self, text: str, style: str = "") -> Label:
        self.pieces.append((text, style))
        return self

    def text(self, *, color: bool) -> str:
        return "".join(styled(text, style, color=color) for text, style in self.pieces)


@dataclass
class Node:
    """A label and the nodes drawn under it."""

    label: Label
    children: list[Node] = field(default_factory=list)

    def add(self, label: Label) -> Node:
        child = Node(label)
        self.children.append(child)
        return child

    def lines(self, *, color: bool) -> list[str]:
        """The node and everything under it, one string per line, guides drawn as ``├──``."""
        out = self.label.text(color=color).splitlines() or [""]
        for index, child in enumerate(self.children):
            last = index == len(self.children) - 1
            first, rest = ("└── ", "    ") if last else ("├── ", "│   ")
            for number, line in enumerate(child.lines(color=color)):
                guide = first if number == 0 else rest
                out.append(styled(guide, "dim", color=color) + line)
        return out


class Terminal:
    """Where the watch command writes: a terminal (styled, redrawn in place) or a pipe (plain
    text, the final tree once)."""

    def __init__(self, file: IO[str] | None = None, *, color: bool | None = None) -> None:
        self.file = file or sys.stdout
        isatty = getattr(self.file, "isatty", None)
        self.is_terminal = bool(isatty and isatty())
        self.color = self.is_terminal and "NO_COLOR" not in os.environ if color is None else color
        self._drawn = 0

    @property
    def height(self) -> int:
        return shutil.get_terminal_size().lines

    def print(self, text: str = "", style: str = "") -> None:
        """A line (or lines) below what is drawn; a later ``draw`` starts under it."""
        self.file.write(styled(text, style, color=self.color) + "\n")
        self.file.flush()
        self._drawn = 0

    def draw(self, node: Node) -> None:
        """Draw ``node`` over the last drawing on a terminal, cropped to the screen's size."""
        lines = node.lines(color=self.color)
        if self.is_terminal:
            size = shutil.get_terminal_size()
            lines = [_crop(line, size.columns) for line in lines[: max(1, size.lines - 1)]]
        erase = f"\x1b[{self._drawn}F\x1b[J" if self.is_terminal and self._drawn else ""
        self.file.write(erase + "".join(line + "\n" for line in lines))
        self.file.flush()
        self._drawn = len(lines) if self.is_terminal else 0


def _crop(line: str, width: int) -> str:
    # Count only what is printed (not the ANSI codes), so a line never wraps and the next
    # redraw's cursor-up lands where this one began.
    out, shown, index = [], 0, 0
    while index < len(line) and shown < width - 1:
        if line[index] == "\x1b":
            end = line.find("m", index)
            end = len(line) - 1 if end < 0 else end
            out.append(line[index : end + 1])
            index = end + 1
            continue
        out.append(line[index])
        shown += 1
        index += 1
    return "".join(out) + ("\x1b[0m" if "\x1b[" in line else "")


def usage_text(usage: Usage | None) -> str:
    """``12 in / 4 out tokens $0.0012``, or nothing before any was used; the cost is marked
    ``≥`` when some calls have no known price, and left out when none has."""
    if usage is None or usage.input_tokens + usage.output_tokens + usage.llm_calls <= 0:
        return ""
    text = f"{usage.input_tokens} in / {usage.output_tokens} out tokens"
    return text + cost_text(usage)


def cost_text(usage: Usage | None) -> str:
    """`` $0.0012`` (`` ≥$0.0012`` when some calls are unpriced), or nothing without a cost."""
    if usage is None or usage.cost_usd is None:
        return ""
    return f" {'≥' if usage.unpriced_calls else ''}${usage.cost_usd:.4f}"


def last_line(text: str | None, width: int = 80) -> str:
    """The last non-empty line of a tool's output, cut to ``width``."""
    lines = (text or "").strip().splitlines()
    return lines[-1][:width] if lines else ""


def render(tree: Tree, *, live: bool = False, max_steps: int | None = None) -> Node:
    """The whole tree; ``live`` folds finished sub-agents into one line each, and ``max_steps``
    keeps only the main agent's latest steps (a terminal shows the top of what does not fit,
    and the latest steps are at the bottom)."""
    head = (
        Label().add("conversation ", "bold").add(tree.conversation_id, "bold").add("  ")
        .add(tree.status, _status_style(tree.status)).add("  ")
        .add(f"{tree.events} events", "dim").add("  ").add(usage_text(tree.usage), "dim")
    )
    if tree.tree_usage is not None and tree.tree_usage.llm_calls > (tree.usage.llm_calls if tree.usage else 0):
        head.add(f"  tree: {tree.tree_usage.llm_calls} calls{cost_text(tree.tree_usage)}", "dim")
    if tree.pending_permissions:
        head.add(f"  ⏸ {len(tree.pending_permissions)} waiting for permission", "bold magenta")
    root = Node(head)
    steps = tree.steps
    if max_steps is not None and len(steps) > max_steps:
        root.add(Label().add(f"… {len(steps) - max_steps} earlier steps", "dim"))
        steps = steps[-max_steps:]
    _draw_steps(tree, root, steps, live)
    for sub in list(tree.waiting):
        _draw_subagent(tree, root, sub, live)
    return root


def _draw_steps(tree: Tree, node: Node, steps: list[Step], live: bool) -> None:
    for step in list(steps):
        if isinstance(step, Message):
            who, style = _who(step)
            node.add(Label().add(f"{who}: ", "dim").add(step.text.strip(), style))
            continue
        mark, style = _CALL_MARKS.get(step.status, ("?", ""))
        label = Label().add(f"{mark} ", style).add(step.tool_name, "bold").add(" ").add(step.title)
        output = last_line(step.output) if step.tool_name not in _QUIET_TOOLS else ""
        if step.request is not None:
            label.add(f"  ⏸ waiting for permission: request {step.request.request_id}", "bold magenta")
        elif output:
            label.add(f"  → {output}", "dim")
        branch = node.add(label)
        for sub in list(step.subagents):
            _draw_subagent(tree, branch, sub, live)


def _draw_subagent(tree: Tree, node: Node, sub: Subagent, live: bool) -> None:
    shown = "failed" if sub.status == "error" else sub.status
    label = (
        Label().add("◆ ", "cyan").add(sub.subagent_type, "bold cyan").add(" ")
        .add(sub.label + " " if sub.label else "", "dim").add(sub.description or sub.subagent_id[:8]).add("  ")
        .add(shown, _SUBAGENT_STYLES.get(sub.status, "")).add("  ").add(usage_text(sub.usage), "dim")
    )
    if sub.stop_reason:
        label.add(f"  stopped: {sub.stop_reason}", "bold yellow")
    subtree = tree.subtree_usage(sub)
    if subtree is not None and sub.usage is not None and subtree.llm_calls > sub.usage.llm_calls:
        label.add(f"  with its sub-agents: {subtree.llm_calls} calls{cost_text(subtree)}", "dim")
    if sub.work_state and sub.work_state.get("state") == "requires_action":
        label.add("  ⏸ waiting for you", "bold magenta")
    elif sub.work_state and sub.status not in SUBAGENT_ENDS and sub.work_state.get("state") != "running":
        label.add(f"  [{sub.work_state['state']}]", "dim")
    if sub.cwd:
        label.add(f"  in {sub.cwd}", "dim")
    if live and sub.status in SUBAGENT_ENDS:
        label.add(f"  ({len(sub.steps)} steps)", "dim")
        node.add(label)
        return
    _draw_steps(tree, node.add(label), sub.steps, live)


def _who(message: Message) -> tuple[str, str]:
    if message.draft:
        return "Agent", "dim"
    if message.role == "user":
        return ("You" if message.owner is None else "Task prompt"), ""
    if message.role == "error":
        return "Error", "red"
    if message.role == "retry":
        return "Model", "yellow"
    return ("System" if message.role == "system" else "Agent"), ""


def _status_style(status: str) -> str:
    return {"running": "yellow", "finished": "green", "error": "red"}.get(status, "dim")
