"""The stamp of a sub-agent's events, and the ``task`` call behind it (``stamping.py``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openhands.sdk.event import Event
from openhands.tools.task.definition import TaskObservation


@dataclass(frozen=True, slots=True)
class TaskCall:
    """One ``task`` call, as it starts a sub-agent."""

    tool_call_id: str
    """The id the model gave the call: the ``parent_tool_use_id`` of its sub-agent's events."""
    ancestry: tuple[str, ...]
    """The ``task`` call ids from the root down to this one (its last item)."""
    subagent_type: str
    description: str | None
    resume: str | None
    """OpenHands' task id this call resumes, if any."""
    parent_subagent_id: str | None
    """The sub-agent that made the call; ``None`` for a call of the root conversation."""

    @property
    def depth(self) -> int:
        """1 for a sub-agent of the root, 2 for one of its sub-agents, ..."""
        return len(self.ancestry)


@dataclass(frozen=True, slots=True)
class Stamp:
    """Where a sub-agent's event comes from."""

    parent_tool_use_id: str
    """The ``tool_call_id`` of the ``task`` call whose sub-agent produced the event."""
    subagent_id: str
    """The sub-agent's stable id: its OpenHands sub-conversation id (kept across resumes)."""
    ancestry: tuple[str, ...]
    """The ``task`` call ids from the root down to ``parent_tool_use_id`` (its last item)."""
    parent_subagent_id: str | None
    """The sub-agent above this one; ``None`` at depth 1."""
    subagent_type: str
    label: str
    """OpenHands' name for the sub-agent: the call's ``description``, else its task id."""
    depth: int
    persistence_dir: str | None
    """Where OpenHands persists the sub-conversation (``<parent>/subagents/<id hex>``)."""

    def wire(self) -> dict[str, str]:
        """The two fields a stamped frame adds to the event's own JSON."""
        return {"parent_tool_use_id": self.parent_tool_use_id, "subagent_id": self.subagent_id}


@dataclass(frozen=True, slots=True)
class TaskEnd:
    """A ``task`` call that returned (handed to ``on_task_end`` before OpenHands publishes its
    observation, which it does only once the slowest call of the batch is done)."""

    call: TaskCall
    stamp: Stamp | None
    """``None`` when no sub-agent ran (an unknown type, a refused resume)."""
    observation: TaskObservation
    state: Any
    """The sub-conversation's ``ConversationState`` (its metrics), if one ran."""


OnEvent = Callable[[Stamp | None, Event], None]
"""``(stamp, event)``; the stamp is ``None`` for the root's own events (``root_events=True``)."""
OnTaskEnd = Callable[[TaskEnd], None]


