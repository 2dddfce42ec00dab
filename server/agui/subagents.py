"""Sub-agents as AG-UI sees them: ``SUBAGENT_STARTED`` before any of a sub-agent's events,
one ``SUBAGENT_FINISHED`` / ``SUBAGENT_ERROR`` after them, per run.

AG-UI checks each stream on its own: an event of a sub-agent the stream never announced, or
the end of one, must come after a ``SUBAGENT_STARTED`` in the same run, and a nested one's
parent must have started first. A stream that resumes after a sub-agent started (or the
stream of a later run, if a sub-agent outlives its run) therefore *restates* it: the same
``SUBAGENT_STARTED``, marked ``metadata.taskwire.restated``, its ancestors first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from ..store import ConversationRecord

Events = list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class SubagentInfo:
    """What ``SUBAGENT_STARTED`` says of a sub-agent."""

    subagent_id: str
    name: str = "general-purpose"
    """Its type (``subagent_type``)."""
    description: str = ""
    parent_tool_use_id: str | None = None
    parent_subagent_id: str | None = None
    status: str | None = None
    """How it ended, once known (``completed``, ``error``, ``cancelled``); ``running`` or ``None`` before."""
    label: str | None = None
    """Its per-tree name as the models see it (``task-1``, ``task-1.2``)."""

    @classmethod
    def from_conversation(cls, record: ConversationRecord) -> SubagentInfo:
        """From a sub-agent's stored record (``ConversationStore.tree``)."""
        parent = record.parent_id if record.parent_id != record.root_id else None
        return cls(
            record.id,
            record.subagent_type or "general-purpose",
            record.description or "",
            record.parent_tool_use_id,
            parent,
            record.subagent_status,
            record.label,
        )

    @classmethod
    def from_started(cls, event: Mapping[str, Any]) -> SubagentInfo:
        """From a ``SubagentStartedEvent``'s wire JSON."""
        return cls(
            event["subagent_id"],
            event.get("subagent_type") or "general-purpose",
            event.get("description") or "",
            event.get("parent_tool_use_id"),
            event.get("parent_subagent_id"),
            label=event.get("label"),
        )

    def started_event(self, *, restated: bool) -> dict[str, Any]:
        event: dict[str, Any] = {"type": "SUBAGENT_STARTED", "subagentRunId": self.subagent_id, "name": self.name}
        if self.description:
            event["description"] = self.description
        if self.parent_tool_use_id:
            event["parentToolCallId"] = self.parent_tool_use_id
        if self.parent_subagent_id:
            event["parentSubagentRunId"] = self.parent_subagent_id
        taskwire: dict[str, Any] = {}
        if self.label:
            taskwire["label"] = self.label
        if restated:
            taskwire["restated"] = True
        if taskwire:
            event["metadata"] = {"taskwire": taskwire}
        return event


def finished_event(subagent_id: str, status: str, result: str, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``SUBAGENT_FINISHED`` (``completed``) or ``SUBAGENT_ERROR`` (``error``, ``cancelled``,
    or never reported: ``code`` says which)."""
    taskwire = {"status": status, **(extra or {})}
    if status == "completed":
        return {
            "type": "SUBAGENT_FINISHED", "subagentRunId": subagent_id, "result": result,
            "outcome": {"type": "success"}, "metadata": {"taskwire": taskwire},
        }
    message = result or f"the sub-agent ended: {status}"
    return {
        "type": "SUBAGENT_ERROR", "subagentRunId": subagent_id, "message": message, "code": status,
        "metadata": {"taskwire": taskwire},
    }


class SubagentTracker:
    """Which sub-agents the current run has announced and ended, and what is known of each."""

    def __init__(self, known: Mapping[str, SubagentInfo] = {}) -> None:
        self._known: dict[str, SubagentInfo] = dict(known)
        self._open: dict[str, None] = {}
        """Announced in this run and not ended, in announcement order."""
        self._ended: set[str] = set()

    def learn(self, info: SubagentInfo) -> None:
        self._known[info.subagent_id] = info

    def start(self, info: SubagentInfo, out: Events) -> None:
        """A ``SubagentStartedEvent``: announce it (its parent first, if the run has not)."""
        self.learn(info)
        if info.subagent_id in self._open or info.subagent_id in self._ended:
            return
        if info.parent_subagent_id is not None:
            self.ensure(info.parent_subagent_id, out)
        self._open[info.subagent_id] = None
        out.append(info.started_event(restated=False))

    def ensure(self, subagent_id: str, out: Events, _seen: frozenset[str] = frozenset()) -> None:
        """Before an event of ``subagent_id``: restate it (and its ancestors) unless the run
        announced it already."""
        if subagent_id in self._open or subagent_id in self._ended or subagent_id in _seen:
            return
        info = self._known.get(subagent_id) or SubagentInfo(subagent_id)
        if info.parent_subagent_id is not None:
            self.ensure(info.parent_subagent_id, out, _seen | {subagent_id})
        self._open[subagent_id] = None
        out.append(info.started_event(restated=True))

    def finish(self, subagent_id: str, status: str, result: str, out: Events, extra: Mapping[str, Any] | None = None) -> None:
        """A ``SubagentFinishedEvent`` (after ``ensure``): its one end in this run."""
        info = self._known.get(subagent_id)
        if info is not None:
            self._known[subagent_id] = replace(info, status=status)
        if subagent_id not in self._open:
            return  # ended already in this run
        del self._open[subagent_id]
        self._ended.add(subagent_id)
        out.append(finished_event(subagent_id, status, result, extra))

    def close_run(self, out: Events, suspended: Mapping[str, list[str]] | None = None) -> None:
        """The run ends: end the sub-agents still open, deepest first, with what is known of
        them (a stream may end a run before a sub-agent's own end reached it). ``suspended``:
        the run ends on an interrupt, by sub-agent the interrupts it raised; one still working
        ends this run's segment ``suspended`` (it goes on, and a later run restates it)."""
        for subagent_id in reversed(list(self._open)):
            info = self._known.get(subagent_id)
            status = info.status if info is not None and info.status not in (None, "running") else None
            if status is None and suspended is not None:
                outcome: dict[str, Any] = {"type": "suspended"}
                if suspended.get(subagent_id):
                    outcome["interruptIds"] = list(suspended[subagent_id])
                out.append({"type": "SUBAGENT_FINISHED", "subagentRunId": subagent_id, "outcome": outcome,
                            "metadata": {"taskwire": {"status": "running"}}})
            elif status is None:
                out.append(finished_event(subagent_id, "unfinished", "the run ended before this sub-agent reported its end"))
            else:
                out.append(finished_event(subagent_id, status, "", {"restated": True}))
        self._open.clear()
        self._ended.clear()
