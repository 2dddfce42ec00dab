"""The sub-agent tree of a conversation, rebuilt from stored records."""

from __future__ import annotations

from typing import Any, Iterable

from ..events import Usage
from ..store import ConversationRecord, EventQuery, Store
from .budgets import LIMITS


def descendants(tree: Iterable[ConversationRecord], conversation_id: str) -> list[str]:
    """``conversation_id`` and every conversation below it, parents before children."""
    children: dict[str | None, list[str]] = {}
    for record in tree:
        children.setdefault(record.parent_id, []).append(record.id)
    found, frontier = [conversation_id], [conversation_id]
    while frontier:
        nxt = [c for parent in frontier for c in children.get(parent, [])]
        found.extend(nxt)
        frontier = nxt
    return found


def spawned_by(tree: Iterable[ConversationRecord], tool_call_id: str) -> ConversationRecord | None:
    """The sub-agent spawned by the tool call ``tool_call_id``, if any."""
    return next((r for r in tree if r.parent_tool_use_id == tool_call_id and not r.is_root), None)


def subtree_usages(tree: Iterable[ConversationRecord]) -> dict[str, Usage]:
    """Each conversation's usage with that of every sub-agent below it, by id (one pass, children
    added to parents from the deepest up, so every total is the exact sum of its parts)."""
    records = list(tree)
    totals = {r.id: r.usage for r in records}
    parent = {r.id: r.parent_id for r in records}
    depth: dict[str, int] = {}
    for record in records:
        node, d = record.id, 0
        while parent.get(node) is not None and d <= len(records):
            node, d = parent[node] or "", d + 1
        depth[record.id] = d
    for record in sorted(records, key=lambda r: depth[r.id], reverse=True):
        if record.parent_id in totals:
            totals[record.parent_id] = totals[record.parent_id] + totals[record.id]
    return totals


def stop_reason(record: ConversationRecord) -> str | None:
    """The budget that stopped a sub-agent (its ``status_reason`` names it first), if one did."""
    first = (record.status_reason or "").split(" ", 1)[0]
    return first if first in LIMITS and record.subagent_status not in (None, "running") else None


async def subagent_entries(
    store: Store, tree: list[ConversationRecord], *, under: str
) -> list[dict[str, Any]]:
    """One entry per sub-agent below ``under``: what ``GET .../subagents`` returns."""
    by_id = {r.id: r for r in tree}
    subtree = subtree_usages(tree)
    entries = []
    for sid in descendants(tree, under)[1:]:
        record = by_id[sid]
        parent = by_id.get(record.parent_id or "")
        entries.append(
            {
                "subagent_id": record.id,
                "label": record.label,
                "parent_tool_use_id": record.parent_tool_use_id,
                "parent_subagent_id": record.parent_id if parent is not None and not parent.is_root else None,
                "subagent_type": record.subagent_type,
                "description": record.description,
                "status": record.subagent_status or "running",
                "result": record.result,
                "usage": record.usage.model_dump(),
                "subtree_usage": subtree[record.id].model_dump(),
                "stop_reason": stop_reason(record),
                "event_count": await store.count(EventQuery(root_id=record.root_id, conversation_ids=[sid])),
                "created_at": record.created_at.isoformat().replace("+00:00", "Z"),
            }
        )
    return entries
