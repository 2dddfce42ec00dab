"""``Tree``: a conversation's events nested as they arrive: the main agent's steps in order,
each tool call holding the sub-agents it spawned, each sub-agent its own steps, recursively.

One rule places everything, for every backend: an event belongs to the stream of its
``subagent_id`` (none: the main agent's); a sub-agent goes under the tool call whose
``tool_call_id`` equals its ``parent_tool_use_id``, looked up first in the stream of the
sub-agent that spawned it (``parent_subagent_id``). A sub-agent whose call has not arrived yet
waits in ``Tree.waiting`` and moves under the call when it comes.

A call that waits for a person's permission is ``pending`` and holds its ``request`` until the
answer comes; ``Tree.pending_permissions`` is the tree's waiting set as the root's stream
states it (``pending_permissions``), so it is known with forwarding off too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from taskwire_client.frames import is_full_state, root_status
from taskwire_client.events import (
    ACPToolCallEvent,
    ActionEvent,
    AgentErrorEvent,
    ConversationStateUpdateEvent,
    Event,
    MessageEvent,
    ObservationEvent,
    PermissionRequestEvent,
    PermissionResolvedEvent,
    LLMRetryEvent,
    StreamingDeltaEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    Usage,
)
from taskwire_client.retries import retry_line
from taskwire_client.usage import subtree_usage, usage_of
from taskwire_client.tree_nodes import (
    SUBAGENT_ENDS,
    Message,
    Node,
    Step,
    Subagent,
    ToolCall,
    _content_text,
    call_title,
    describe,
)

__all__ = ["SUBAGENT_ENDS", "Message", "Node", "Step", "Subagent", "ToolCall", "Tree", "call_title", "describe"]

class Tree:
    """One conversation's tree. ``apply`` each event in arrival order (``LiveEvents`` gives
    them once, in ``seq`` order); read ``steps``, ``status``, ``usage`` and ``subagents`` any
    time."""

    def __init__(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.status = "unknown"
        """The root's status: ``idle``, ``running``, ``paused``, ``finished``, ``error``."""
        self.usage: Usage | None = None
        """The root's own token usage so far (its sub-agents' is on each ``Subagent``)."""
        self.tree_usage: Usage | None = None
        """The whole tree's tokens and cost, as the root last said (``full_state``, ``tree_usage``)."""
        self.events = 0
        """Stored events taken (those with a ``seq``)."""
        self.steps: list[Step] = []
        """The main agent's steps."""
        self.subagents: dict[str, Subagent] = {}
        """Every sub-agent seen, by id."""
        self.waiting: list[Subagent] = []
        """Sub-agents whose spawning call has not arrived."""
        self.error: str | None = None
        """Why the main agent could not go on: its last ``AgentErrorEvent``'s message."""
        self.pending_permissions: list[dict[str, Any]] = []
        """The tree's permission requests waiting for a person, as the root last said:
        ``request_id``, ``tool_name``, ``title``, ``tool_call_id``, and for a sub-agent's,
        ``subagent_id`` and ``parent_tool_use_id``."""
        self._drafts: dict[str | None, Message] = {}
        self._calls: dict[tuple[str | None, str], ToolCall] = {}
        self._calls_by_id: dict[str, ToolCall] = {}

    def subtree_usage(self, sub: Subagent) -> Usage | None:
        """``sub``'s tokens and cost with every sub-agent's below it, live."""
        return subtree_usage(sub, self.subagents.values())

    # -- taking events in ---------------------------------------------------------------

    def apply(self, event: Event) -> Node | None:
        """Place ``event``; returns the node it added or changed (``None`` for a change of
        the conversation's own status or usage, or a kind the tree does not draw)."""
        if is_full_state(event):
            self.apply_full_state(event.value)  # type: ignore[attr-defined]
            return None
        if event.seq is not None:
            self.events += 1
        sid = event.subagent_id
        owner = self._stream_owner(event)
        steps = owner.steps if owner is not None else self.steps
        if isinstance(event, StreamingDeltaEvent):
            draft = self._drafts.get(sid)
            if draft is None:
                draft = self._drafts[sid] = Message("assistant", "", owner, draft=True)
                steps.append(draft)
            draft.text += event.content
            return draft
        if isinstance(event, MessageEvent):
            if event.role == "assistant":
                self._drop_draft(sid, steps)
            message = Message(event.role, event.content, owner)
            steps.append(message)
            return message
        if isinstance(event, ActionEvent):
            self._drop_draft(sid, steps)
            if event.thought:
                steps.append(Message("assistant", event.thought, owner))
            call = self._call(owner, event.tool_call_id, event.tool_name)
            call.arguments = dict(event.arguments)
            call.title = call_title(event.arguments)
            return call
        if isinstance(event, ObservationEvent):
            call = self._call(owner, event.tool_call_id, event.tool_name)
            call.status = event.status or ("failed" if event.is_error else "completed")
            call.output = event.content
            return call
        if isinstance(event, ACPToolCallEvent):
            call = self._call(owner, event.tool_call_id, event.tool_kind or "tool")
            call.title = event.title or call.title
            call.status = event.status or call.status
            if isinstance(event.raw_input, dict):
                call.arguments = dict(event.raw_input)
            call.output = _content_text(event.content) or call.output
            return call
        if isinstance(event, PermissionRequestEvent):
            call = self._call(owner, event.tool_call_id, event.tool_name)
            call.request, call.resolution = event, None
            call.status = "pending"
            if not call.arguments:
                call.arguments, call.title = dict(event.arguments), event.title
            return call
        if isinstance(event, PermissionResolvedEvent):
            call = self._call(owner, event.tool_call_id, "tool")
            call.request, call.resolution = None, event
            if call.status == "pending" and event.outcome == "allowed":
                call.status = "in_progress"
            return call
        if isinstance(event, AgentErrorEvent):
            self._drop_draft(sid, steps)
            message = Message("error", event.error, owner)
            steps.append(message)
            if owner is None:
                self.error = event.error
            return message
        if isinstance(event, LLMRetryEvent):
            if event.discard_text:  # the failed attempt's text: the retry streams its own
                self._drop_draft(sid, steps)
            message = Message("retry", retry_line(event.model_dump()), owner)
            steps.append(message)
            return message
        if isinstance(event, (SubagentStartedEvent, SubagentFinishedEvent)) and owner is not None:
            info = event.model_dump(exclude_none=True)
            info.setdefault("status", "running")
            owner.update(info)
            return owner
        if isinstance(event, ConversationStateUpdateEvent):
            return self._state_update(event, owner)
        return None

    def apply_full_state(self, state: dict[str, Any]) -> None:
        """A socket's first frame: the root's status and usage, and the sub-agent tree."""
        self.status = state.get("status") or self.status
        self.usage = usage_of(state.get("usage")) or self.usage
        self.tree_usage = usage_of(state.get("tree_usage")) or self.tree_usage
        self.apply_subagents(state.get("subagents") or [])
        # Absent when the tree never asked: then nothing waits.
        self.pending_permissions = list(state.get("pending_permissions") or [])

    def apply_subagents(self, entries: list[dict[str, Any]]) -> None:
        """Entries as ``GET .../subagents`` (and ``full_state``) list them."""
        for entry in entries:
            sid = entry["subagent_id"]
            sub = self.subagents.get(sid) or self._add_subagent(
                sid, entry.get("parent_tool_use_id"), entry.get("parent_subagent_id"), known_parent=True
            )
            sub.update(entry)

    def _state_update(self, event: ConversationStateUpdateEvent, owner: Subagent | None) -> Node | None:
        status = root_status(event)
        if status is not None:
            self.status = status
        elif event.key == "pending_permissions" and owner is None and isinstance(event.value, list):
            self.pending_permissions = list(event.value)
        elif event.key == "work_state" and owner is not None and isinstance(event.value, dict):
            owner.update({"work_state": event.value})
            return owner
        elif event.key == "tree_usage" and owner is None and isinstance(event.value, dict):
            self.tree_usage = usage_of(event.value)
        elif event.key == "usage" and isinstance(event.value, dict):
            if owner is None:
                self.usage = usage_of(event.value)
            else:
                owner.update({"usage": event.value})
                return owner
        return None

    def _stream_owner(self, event: Event) -> Subagent | None:
        sid = event.subagent_id
        if sid is None:
            return None
        sub = self.subagents.get(sid)
        if sub is None:
            started = isinstance(event, SubagentStartedEvent)
            parent = event.parent_subagent_id if started else None  # type: ignore[attr-defined]
            sub = self._add_subagent(sid, event.parent_tool_use_id, parent, known_parent=started)
        return sub

    def _add_subagent(
        self, sid: str, parent_tool_use_id: str | None, parent_subagent_id: str | None, *, known_parent: bool
    ) -> Subagent:
        sub = Subagent(sid, parent_tool_use_id=parent_tool_use_id, parent_subagent_id=parent_subagent_id)
        self.subagents[sid] = sub
        call = self._find_call(parent_subagent_id, parent_tool_use_id, known_parent)
        if call is not None:
            self._attach(call, sub)
        else:
            self.waiting.append(sub)
        return sub

    def _find_call(self, parent_subagent_id: str | None, tool_call_id: str | None, known_parent: bool) -> ToolCall | None:
        if tool_call_id is None:
            return None
        if known_parent and (parent_subagent_id, tool_call_id) in self._calls:
            return self._calls[(parent_subagent_id, tool_call_id)]
        return self._calls_by_id.get(tool_call_id)

    def _call(self, owner: Subagent | None, tool_call_id: str, tool_name: str) -> ToolCall:
        stream = owner.subagent_id if owner is not None else None
        call = self._calls.get((stream, tool_call_id))
        if call is not None:
            return call
        steps = owner.steps if owner is not None else self.steps
        self._drop_draft(stream, steps)
        call = ToolCall(tool_call_id, tool_name, owner)
        self._calls[(stream, tool_call_id)] = call
        self._calls_by_id[tool_call_id] = call
        steps.append(call)
        for sub in [s for s in self.waiting if s.parent_tool_use_id == tool_call_id]:
            if sub.parent_subagent_id in (None, stream):
                self.waiting.remove(sub)
                self._attach(call, sub)
        return call

    @staticmethod
    def _attach(call: ToolCall, sub: Subagent) -> None:
        sub.call = call
        call.subagents.append(sub)

    def _drop_draft(self, stream: str | None, steps: list[Step]) -> None:
        draft = self._drafts.pop(stream, None)
        if draft is not None and draft in steps:
            steps.remove(draft)

    # -- reading ------------------------------------------------------------------------

    def call(self, tool_call_id: str) -> ToolCall | None:
        """A tool call anywhere in the tree, by its id."""
        return self._calls_by_id.get(tool_call_id)

    def walk(self) -> Iterator[Node]:
        """Every node, depth first, in the order a reader reads them (sub-agents whose call has
        not arrived come last)."""

        def steps(items: list[Step]) -> Iterator[Node]:
            for step in list(items):
                yield step
                if isinstance(step, ToolCall):
                    for sub in list(step.subagents):
                        yield from subagent(sub)

        def subagent(sub: Subagent) -> Iterator[Node]:
            yield sub
            yield from steps(sub.steps)

        yield from steps(self.steps)
        for sub in list(self.waiting):
            yield from subagent(sub)

    def outline(self) -> list[str]:
        """The tree as indented plain text, one line a node."""
        return ["  " * node.depth + describe(node) for node in self.walk()]
