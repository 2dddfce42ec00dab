"""Usage as a client adds it up: a sub-agent's own, and its subtree's."""

from __future__ import annotations

from typing import Any, Iterable, Protocol

from taskwire_client.events import Usage


class _Node(Protocol):
    subagent_id: str
    parent_subagent_id: str | None
    usage: Usage | None
    listed_subtree_usage: Usage | None


def usage_of(value: Any) -> Usage | None:
    """A ``Usage`` from a usage dict (a ``usage`` state value, a listed entry's), else ``None``."""
    if isinstance(value, Usage):
        return value
    return Usage.model_validate(value) if isinstance(value, dict) else None


def grown_by(usage: Usage | None) -> int:
    """How far ``usage`` has grown (figures only grow: a smaller one is an older report)."""
    if usage is None:
        return -1
    return usage.input_tokens + usage.output_tokens + usage.llm_calls


def subtree_usage(sub: _Node, every: Iterable[_Node]) -> Usage | None:
    """``sub``'s own usage plus that of every sub-agent below it (by ``parent_subagent_id``), or
    what the server listed when that is further along (a client that joined late)."""
    nodes = list(every)
    below: dict[str | None, list[_Node]] = {}
    for node in nodes:
        below.setdefault(node.parent_subagent_id, []).append(node)
    total: Usage | None = None
    frontier = [sub]
    while frontier:
        node = frontier.pop()
        if node.usage is not None:
            total = node.usage if total is None else total + node.usage
        frontier.extend(below.get(node.subagent_id, []))
    listed = sub.listed_subtree_usage
    return listed if grown_by(listed) > grown_by(total) else total
