"""A tree's permission requests and their answers, folded from its stored events, without I/O.

The store is the truth on every replica: ``GET .../permissions``, the ``full_state`` frame's
``pending_permissions``, recovery after a crash and the tree's remembered ``*_always`` answers
are all read back from ``PermissionRequestEvent`` and ``PermissionResolvedEvent`` records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..events import Event, PermissionRequestEvent, PermissionResolvedEvent

KINDS = ("PermissionRequestEvent", "PermissionResolvedEvent")
"""The event kinds a ledger reads."""


@dataclass(slots=True)
class PermissionEntry:
    """One request, and its answer once it has one."""

    request: PermissionRequestEvent
    resolution: PermissionResolvedEvent | None = None

    @property
    def request_id(self) -> str:
        return self.request.request_id

    @property
    def status(self) -> str:
        """``pending``, or the outcome: ``allowed``, ``rejected``, ``cancelled``, ``timed_out``."""
        return "pending" if self.resolution is None else self.resolution.outcome

    def summary(self) -> dict[str, Any]:
        """The entry of ``pending_permissions``: who waits, on what."""
        return pending_summary(self.request)

    def public(self) -> dict[str, Any]:
        """What ``GET .../permissions`` lists: the request's fields, ``status`` and, once it
        has one, the ``resolution`` event."""
        shown = self.request.model_dump(mode="json", exclude_none=True)
        shown["status"] = self.status
        if self.resolution is not None:
            shown["resolution"] = self.resolution.model_dump(mode="json", exclude_none=True)
        return shown


def pending_summary(request: PermissionRequestEvent) -> dict[str, Any]:
    """``request_id``, ``subagent_id``, ``parent_tool_use_id``, ``tool_call_id``, ``tool_name``
    and ``title`` (the sub-agent fields omitted for the main agent's own requests)."""
    summary = {
        "request_id": request.request_id,
        "subagent_id": request.subagent_id,
        "parent_tool_use_id": request.parent_tool_use_id,
        "tool_call_id": request.tool_call_id,
        "tool_name": request.tool_name,
        "title": request.title,
    }
    return {key: value for key, value in summary.items() if value is not None}


class PermissionLedger:
    """Feed it a tree's permission events in ``seq`` order (``take``); read what waits."""

    def __init__(self) -> None:
        self.entries: dict[str, PermissionEntry] = {}
        """Every request seen, by ``request_id``, in the order they were made."""

    def take(self, event: Event) -> None:
        """Take one event; any kind but the two permission kinds is ignored. An answer to a
        request never seen (a stream read in part) is dropped."""
        if isinstance(event, PermissionRequestEvent):
            self.entries.setdefault(event.request_id, PermissionEntry(event))
        elif isinstance(event, PermissionResolvedEvent):
            entry = self.entries.get(event.request_id)
            if entry is not None and entry.resolution is None:
                entry.resolution = event  # the first answer stored is the one that counted

    def pending(self) -> list[PermissionEntry]:
        """Requests still waiting, oldest first."""
        return [entry for entry in self.entries.values() if entry.resolution is None]

    def listed(self, status: Literal["pending", "all"]) -> list[dict[str, Any]]:
        """What ``GET .../permissions?status=`` returns."""
        entries = self.pending() if status == "pending" else list(self.entries.values())
        return [entry.public() for entry in entries]

    def remembered(self) -> dict[str, Literal["allow", "reject"]]:
        """Tools a person answered ``allow_always`` or ``reject_always`` for, by tool name: they
        decide the tree's later requests for that tool. The latest such answer wins."""
        decided: dict[str, Literal["allow", "reject"]] = {}
        for entry in self.entries.values():
            resolution = entry.resolution
            if resolution is None or resolution.option_id is None or resolution.answered_by == "policy":
                continue
            option = next((o for o in entry.request.options if o.option_id == resolution.option_id), None)
            if option is not None and option.kind.endswith("_always"):
                decided[entry.request.tool_name] = "allow" if option.kind == "allow_always" else "reject"
        return decided
