"""Which streams of a conversation tree one subscriber sees, as the tree grows.

A subscriber's view is fixed by four things: the server's ``OH_FORWARD_SUBAGENT_EVENTS``, the
socket's ``subagents`` and ``parent_tool_use_id`` parameters, and the conversation it was opened
on (a root, or a sub-agent: its scope). A view over a subtree changes as sub-agents start, so
the view learns them from ``SubagentStartedEvent`` records, the only records it parses.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Mapping

from ..events import EventRecord
from ..store import ConversationRecord

SubagentsParam = Literal["all", "none"]

SUBAGENT_STARTED = "SubagentStartedEvent"


@dataclass(frozen=True, slots=True)
class SubagentNode:
    """One sub-agent's place in the tree."""

    subagent_id: str
    """Its id, which is also the id of its own stream (its child conversation)."""
    parent_tool_use_id: str | None
    """The tool call that spawned it."""
    parent_subagent_id: str | None
    """The sub-agent that spawned it; ``None`` for a sub-agent of the root."""

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> SubagentNode:
        """From an entry of ``full_state["subagents"]`` (or ``GET .../subagents``)."""
        return cls(entry["subagent_id"], entry.get("parent_tool_use_id"), entry.get("parent_subagent_id"))

    @classmethod
    def from_conversation(cls, record: ConversationRecord) -> SubagentNode:
        """From a sub-agent's stored record (``ConversationStore.tree``)."""
        parent = record.parent_id if record.parent_id != record.root_id else None
        return cls(record.id, record.parent_tool_use_id, parent)

    @classmethod
    def from_started(cls, record: EventRecord) -> SubagentNode:
        """From a ``SubagentStartedEvent`` record (rare enough to parse)."""
        data = json.loads(record.json)
        return cls(
            data.get("subagent_id") or record.conversation_id,
            data.get("parent_tool_use_id"),
            data.get("parent_subagent_id"),
        )


class ViewKind(enum.Enum):
    NOTHING = "nothing"
    """No stream: a sub-agent filter with forwarding off (as if sub-agents did not exist)."""
    OWN = "own"
    """The opened conversation's own stream only."""
    TREE = "tree"
    """Every stream of the tree."""
    SUBTREE = "subtree"
    """A set of sub-agent streams that grows as sub-agents start."""


class View:
    """The streams one subscriber sees.

    - forwarding off, or ``subagents=none``: the opened conversation's own stream (with
      ``parent_tool_use_id`` and forwarding off: nothing, since no own event carries that id);
    - ``parent_tool_use_id=X``: the sub-agent spawned by X and every sub-agent below it;
    - a socket opened on a sub-agent ``S``: ``S`` and every sub-agent below it;
    - otherwise the whole tree.
    """

    def __init__(
        self,
        root_id: str,
        *,
        forwarding: bool,
        subagents: SubagentsParam = "all",
        parent_tool_use_id: str | None = None,
        scope_subagent_id: str | None = None,
        tree: Iterable[SubagentNode] = (),
    ) -> None:
        self.root_id = root_id
        self.own_id = scope_subagent_id or root_id
        self._call = parent_tool_use_id
        self._scoped = scope_subagent_id is not None
        self._in_scope: set[str] = set()
        """The scope sub-agent and every sub-agent below it."""
        self._below_call: set[str] = set()
        """The sub-agent spawned by the call and every sub-agent below it."""
        self._members: set[str] = set()
        """The sub-agents seen: in both of the above (each when it applies)."""
        if not forwarding or subagents == "none":
            self.kind = ViewKind.NOTHING if parent_tool_use_id is not None else ViewKind.OWN
        elif parent_tool_use_id is None and scope_subagent_id is None:
            self.kind = ViewKind.TREE
        else:
            self.kind = ViewKind.SUBTREE
            if scope_subagent_id is not None:
                self.learn(SubagentNode(scope_subagent_id, None, None))
            self._learn_all(tree)

    @property
    def dynamic(self) -> bool:
        """True when the view changes as sub-agents start (reads must learn them in seq order)."""
        return self.kind is ViewKind.SUBTREE

    def sees(self, conversation_id: str) -> bool:
        """Whether records of stream ``conversation_id`` belong to this view."""
        kind = self.kind
        if kind is ViewKind.TREE:
            return True
        if kind is ViewKind.OWN:
            return conversation_id == self.own_id
        return conversation_id in self._members

    def stream_ids(self) -> list[str] | None:
        """The streams to read from the store (``None``: the whole tree), as known now."""
        if self.kind is ViewKind.TREE:
            return None
        if self.kind is ViewKind.OWN:
            return [self.own_id]
        return sorted(self._members)  # empty for NOTHING

    def learn(self, node: SubagentNode) -> None:
        """Take in a sub-agent that started (anywhere in the tree: a scoped view needs the
        scope's ancestors to tell whether it lies below the call). Parents must be learnt before
        their children (true in ``seq`` order, since a sub-agent starts after its parent)."""
        if self.kind is not ViewKind.SUBTREE:
            return
        sid, parent = node.subagent_id, node.parent_subagent_id
        in_scope = sid == self.own_id or parent in self._in_scope
        if in_scope:
            self._in_scope.add(sid)
        below_call = self._call is not None and (node.parent_tool_use_id == self._call or parent in self._below_call)
        if below_call:
            self._below_call.add(sid)
        if (in_scope or not self._scoped) and (below_call or self._call is None):
            self._members.add(sid)

    def learn_record(self, record: EventRecord) -> None:
        """Learn from ``record`` if it is a ``SubagentStartedEvent``; ignore any other."""
        if record.kind == SUBAGENT_STARTED and self.kind is ViewKind.SUBTREE:
            self.learn(SubagentNode.from_started(record))

    def _learn_all(self, nodes: Iterable[SubagentNode]) -> None:
        # A snapshot may list children before parents: learn in passes, parents first.
        waiting = list(nodes)
        known = {n.subagent_id for n in waiting}
        learnt: set[str] = set()
        while waiting:
            ready = [n for n in waiting if n.parent_subagent_id not in known or n.parent_subagent_id in learnt]
            if not ready:  # a cycle cannot come from a real tree; take the rest as they are
                ready = waiting
            for node in ready:
                self.learn(node)
                learnt.add(node.subagent_id)
            waiting = [n for n in waiting if n.subagent_id not in learnt]
