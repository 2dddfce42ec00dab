"""A conversation as a tree for the terminal: the main agent's steps in order, each tool call
holding the sub-agents it spawned, each sub-agent its own steps, recursively.

Built event by event with the rule every consumer uses (and the viewer page too): an event goes
to the stream of its ``subagent_id``; a sub-agent goes under the tool call whose
``tool_call_id`` equals its ``parent_tool_use_id``, looked up in the stream of the sub-agent that
spawned it (``parent_subagent_id``) when that is known. ``render()`` draws it with ``rich``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from rich.text import Text
from rich.tree import Tree

from server.cli.rows import call_title, last_line, observation_status, root_status

ROOT = ""

_CALL_MARKS = {
    "pending": ("·", "dim"),
    "in_progress": ("…", "yellow"),
    "completed": ("✓", "green"),
    "failed": ("✗", "red"),
    "cancelled": ("⊘", "dim"),
}
_SUBAGENT_STYLES = {"running": "yellow", "completed": "green", "error": "red", "cancelled": "dim"}
_TERMINAL = frozenset({"completed", "error", "cancelled"})


@dataclass
class Line:
    """A message, an error, or text streaming in."""

    who: str
    text: str
    style: str = ""


@dataclass
class Call:
    """A tool call, with its result once it has one and the sub-agents it spawned."""

    tool_call_id: str
    tool: str
    title: str = ""
    status: str = "in_progress"
    output: str = ""
    subagents: list[Subagent] = field(default_factory=list)


@dataclass
class Subagent:
    """A sub-agent and its own steps."""

    subagent_id: str
    parent_tool_use_id: str | None = None
    parent_stream: str | None = None
    subagent_type: str = "sub-agent"
    description: str = ""
    label: str = ""
    status: str = "running"
    usage: dict[str, Any] | None = None
    steps: list[Step] = field(default_factory=list)

    def update(self, info: dict[str, Any]) -> None:
        """Take what is known about it; status only moves forward and usage only grows."""
        for name in ("subagent_type", "description", "label"):
            if info.get(name):
                setattr(self, name, info[name])
        if info.get("status") and self.status not in _TERMINAL:
            self.status = info["status"]
        usage = info.get("usage")
        if usage and _total(usage) >= _total(self.usage):
            self.usage = usage


Step = Union[Line, Call]


def _total(usage: dict[str, Any] | None) -> int:
    if not usage:
        return -1
    return int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0)) + int(usage.get("llm_calls", 0))


def usage_text(usage: dict[str, Any] | None) -> str:
    """``12 in / 4 out tokens``, or nothing before any was used."""
    if not usage or _total(usage) <= 0:
        return ""
    return f"{usage.get('input_tokens', 0)} in / {usage.get('output_tokens', 0)} out tokens"


class EventTree:
    """The tree of one conversation; ``apply`` events in ``seq`` order, ``render`` any time."""

    def __init__(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.status = "connecting"
        self.usage: dict[str, Any] | None = None
        self.events = 0
        self._streams: dict[str, list[Step]] = {ROOT: []}
        self._drafts: dict[str, Line] = {}
        self._calls: dict[tuple[str, str], Call] = {}
        self._calls_by_id: dict[str, Call] = {}
        self._subagents: dict[str, Subagent] = {}
        self._waiting: list[Subagent] = []
        """Sub-agents whose spawning call has not arrived; drawn at the root meanwhile."""

    # -- taking events in ---------------------------------------------------------------

    def apply_full_state(self, state: dict[str, Any]) -> None:
        """The socket's first frame: status, usage and the sub-agent tree."""
        self.status = state.get("status") or self.status
        self.usage = state.get("usage") or self.usage
        self.apply_subagents(state.get("subagents") or [])

    def apply_subagents(self, entries: list[dict[str, Any]]) -> None:
        for entry in entries:
            sid = entry["subagent_id"]
            sub = self._subagents.get(sid) or self._add_subagent(
                sid, entry.get("parent_tool_use_id"), entry.get("parent_subagent_id") or ROOT
            )
            sub.update(entry)

    def apply(self, event: dict[str, Any]) -> None:
        kind = event.get("kind")
        stream = self._stream_of(event)
        if event.get("seq") is not None:
            self.events += 1
        if kind == "StreamingDeltaEvent":
            draft = self._drafts.get(stream)
            if draft is None:
                draft = self._drafts[stream] = Line("Agent", "", "dim")
                self._streams[stream].append(draft)
            draft.text += event.get("content") or ""
        elif kind == "MessageEvent":
            if event.get("role") == "assistant":
                self._drop_draft(stream)
            self._streams[stream].append(Line(_who(event.get("role"), stream), event.get("content") or ""))
        elif kind == "ActionEvent":
            self._drop_draft(stream)
            if event.get("thought"):
                self._streams[stream].append(Line("Agent", event["thought"]))
            call = self._call(stream, event["tool_call_id"], event["tool_name"])
            call.title = call_title(event)
        elif kind == "ObservationEvent":
            call = self._call(stream, event["tool_call_id"], event.get("tool_name") or "tool")
            call.status = observation_status(event)
            call.output = last_line(event.get("content"), 80) if call.tool not in ("finish", "think", "task") else ""
        elif kind == "ACPToolCallEvent":
            call = self._call(stream, event["tool_call_id"], event.get("tool_kind") or "tool")
            call.title = event.get("title") or call.title
            call.status = event.get("status") or call.status
        elif kind == "AgentErrorEvent":
            self._drop_draft(stream)
            self._streams[stream].append(Line("Error", event.get("error") or "", "red"))
        elif kind in ("SubagentStartedEvent", "SubagentFinishedEvent"):
            sub = self._subagents[stream]
            sub.update({**event, "status": event.get("status") or "running"})
        elif (status := root_status(event)) is not None:
            self.status = status

    def _stream_of(self, event: dict[str, Any]) -> str:
        sid = event.get("subagent_id") or ROOT
        if sid not in self._streams:
            parent_stream = (
                event.get("parent_subagent_id") or ROOT if event.get("kind") == "SubagentStartedEvent" else None
            )
            self._add_subagent(sid, event.get("parent_tool_use_id"), parent_stream)
        return sid

    def _add_subagent(self, sid: str, parent_tool_use_id: str | None, parent_stream: str | None) -> Subagent:
        sub = Subagent(sid, parent_tool_use_id=parent_tool_use_id, parent_stream=parent_stream)
        self._subagents[sid] = sub
        self._streams[sid] = sub.steps
        call = self._find_call(parent_stream, parent_tool_use_id)
        if call is not None:
            call.subagents.append(sub)
        else:
            self._waiting.append(sub)
        return sub

    def _find_call(self, stream: str | None, tool_call_id: str | None) -> Call | None:
        if tool_call_id is None:
            return None
        if stream is not None and (stream, tool_call_id) in self._calls:
            return self._calls[(stream, tool_call_id)]
        return self._calls_by_id.get(tool_call_id)

    def _call(self, stream: str, tool_call_id: str, tool: str) -> Call:
        call = self._calls.get((stream, tool_call_id))
        if call is not None:
            return call
        self._drop_draft(stream)
        call = Call(tool_call_id, tool)
        self._calls[(stream, tool_call_id)] = call
        self._calls_by_id[tool_call_id] = call
        self._streams[stream].append(call)
        for sub in [s for s in self._waiting if s.parent_tool_use_id == tool_call_id]:
            if sub.parent_stream in (None, stream):
                self._waiting.remove(sub)
                call.subagents.append(sub)
        return call

    def _drop_draft(self, stream: str) -> None:
        draft = self._drafts.pop(stream, None)
        if draft is not None:
            self._streams[stream].remove(draft)

    # -- drawing --------------------------------------------------------------------------

    def render(self, *, live: bool = False, max_steps: int | None = None) -> Tree:
        """The whole tree; ``live`` folds finished sub-agents into one line each, and
        ``max_steps`` keeps only the main agent's latest steps (a terminal shows the top of
        what does not fit, and the latest steps are at the bottom)."""
        head = Text.assemble(
            ("conversation ", "bold"), (self.conversation_id, "bold"), "  ",
            (self.status, _status_style(self.status)), "  ",
            (f"{self.events} events", "dim"), "  ", (usage_text(self.usage), "dim"),
        )
        tree = Tree(head, guide_style="dim")
        steps = self._streams[ROOT]
        if max_steps is not None and len(steps) > max_steps:
            tree.add(Text(f"… {len(steps) - max_steps} earlier steps", style="dim"))
            steps = steps[-max_steps:]
        self._draw_steps(tree, steps, live)
        for sub in list(self._waiting):
            self._draw_subagent(tree, sub, live)
        return tree

    def _draw_steps(self, node: Tree, steps: list[Step], live: bool) -> None:
        for step in list(steps):
            if isinstance(step, Line):
                node.add(Text.assemble((f"{step.who}: ", "dim"), (step.text.strip(), step.style)))
                continue
            mark, style = _CALL_MARKS.get(step.status, ("?", ""))
            label = Text.assemble((f"{mark} ", style), (step.tool, "bold"), " ", step.title)
            if step.output:
                label.append(f"  → {step.output}", style="dim")
            branch = node.add(label)
            for sub in list(step.subagents):
                self._draw_subagent(branch, sub, live)

    def _draw_subagent(self, node: Tree, sub: Subagent, live: bool) -> None:
        shown = "failed" if sub.status == "error" else sub.status
        label = Text.assemble(
            ("◆ ", "cyan"), (sub.subagent_type, "bold cyan"), " ",
            (sub.label + " " if sub.label else "", "dim"), sub.description or sub.subagent_id[:8], "  ",
            (shown, _SUBAGENT_STYLES.get(sub.status, "")), "  ", (usage_text(sub.usage), "dim"),
        )
        if live and sub.status in _TERMINAL:
            label.append(f"  ({len(sub.steps)} steps)", style="dim")
            node.add(label)
            return
        self._draw_steps(node.add(label, guide_style="cyan"), sub.steps, live)


def _who(role: str | None, stream: str) -> str:
    if role == "user":
        return "You" if stream == ROOT else "Task prompt"
    return "System" if role == "system" else "Agent"


def _status_style(status: str) -> str:
    return {"running": "yellow", "finished": "green", "error": "red"}.get(status, "dim")
