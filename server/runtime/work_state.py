"""What each sub-agent of a tree is doing now: its ``work_state``, for ``GET .../subagents``
and ``full_state``.

A peer that reports work states (an ACP agent serving its sub-agents as child sessions: an
``acp`` agent's sub-agents) has them stored as ``ConversationStateUpdateEvent`` ``key=work_state`` in the sub-agent's stream;
the last one is current. For every other sub-agent it is derived from the record and the
tree's permission ledger: ``running`` while it runs, ``requires_action`` while one of its
permission requests waits, ``idle`` with the stop reason of its end.
"""

from __future__ import annotations

from typing import Any

from ..events import parse_event
from .permissions import read_ledger
from ..store import EventQuery, Store

WORK_STATE_KEY = "work_state"
SCAN_PAGES = 5
"""Pages of a stream's state events read back (newest first) looking for the last of a key."""

_STOP_REASONS = {"completed": "end_turn", "cancelled": "cancelled", "error": "error"}


async def last_state(store: Store, root_id: str, conversation_id: str, key: str) -> Any:
    """The value of the last ``ConversationStateUpdateEvent`` ``key`` stored in
    ``conversation_id``'s own stream (``None`` if there is none in its latest state events)."""
    query = EventQuery(root_id=root_id, conversation_ids=[conversation_id], kinds=["ConversationStateUpdateEvent"])
    page_id = None
    for _ in range(SCAN_PAGES):
        page = await store.search(query, limit=100, page_id=page_id, order="TIMESTAMP_DESC")
        for record in page.items:
            event = parse_event(record.json)
            if getattr(event, "key", None) == key:
                return event.value  # type: ignore[attr-defined]
        page_id = page.next_page_id
        if page_id is None:
            return None
    return None


async def reported_state(store: Store, root_id: str, subagent_id: str) -> dict[str, Any] | None:
    """The last ``work_state`` stored in ``subagent_id``'s stream, if its peer reported any."""
    value = await last_state(store, root_id, subagent_id, WORK_STATE_KEY)
    return value if isinstance(value, dict) else None


def derived_state(entry: dict[str, Any], waiting: bool) -> dict[str, Any]:
    """A sub-agent's work state from its record: its status, and whether a request waits."""
    status = entry["status"]
    if status == "running":
        return {"state": "requires_action" if waiting else "running"}
    state: dict[str, Any] = {"state": "idle", "stop_reason": _STOP_REASONS.get(status, "end_turn")}
    if status == "error" and entry.get("result"):
        state["error"] = entry["result"]
    return state


async def add_work_states(store: Store, root_id: str, entries: list[dict[str, Any]], *, reporting: set[str]) -> None:
    """Set ``work_state`` on each ``subagent_entries`` entry; only the sub-agents in
    ``reporting`` (those a peer that may report states runs) have their stream read for it."""
    if not entries:
        return
    ledger = await read_ledger(store, root_id, [e["subagent_id"] for e in entries])
    waiting = {entry.request.subagent_id for entry in ledger.pending()}
    for entry in entries:
        derived = derived_state(entry, entry["subagent_id"] in waiting)
        reported = await reported_state(store, root_id, entry["subagent_id"]) if entry["subagent_id"] in reporting else None
        if reported is None or (derived["state"] == "idle" and reported.get("state") != "idle"):
            entry["work_state"] = derived  # nothing reported, or it ended after its last report
        else:
            entry["work_state"] = reported
