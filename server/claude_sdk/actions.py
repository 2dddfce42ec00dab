"""What the dispatcher asks its driver to do, each action addressed to a lane.

A lane is one agent's thread inside a Claude Code session: the main agent (``ROOT``) or a
sub-agent, named by the ``tool_use`` id of the call that spawned it (the SDK's
``parent_tool_use_id``). The driver owns one ``AgentHost`` per lane.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..events import Event, LLMCall, Usage

Lane = str | None
"""``None`` for the main agent, else the spawning call's ``tool_use`` id."""

ROOT: Lane = None


@dataclass(frozen=True, slots=True)
class Emit:
    """Emit ``event`` in ``lane``'s stream. A ``SubagentStartedEvent`` means: start the lane's
    sub-agent under its parent lane's host; a ``SubagentFinishedEvent``: finish it there."""

    lane: Lane
    event: Event


@dataclass(frozen=True, slots=True)
class CountUsage:
    """Add ``usage`` to ``lane``'s conversation stats."""

    lane: Lane
    usage: Usage
    call: LLMCall | None = None
    """The model that answered and where ``usage.cost_usd`` came from (Claude Code's own report
    for the main agent's turns, the price table for a sub-agent's)."""


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """The prompt turn the driver started is over: with ``answer``, or failed with ``error``."""

    answer: str | None
    error: str | None = None
    code: str | None = None
    """A stable reason when ``error`` is set, e.g. ``incomplete_tool_call``."""


Action = Emit | CountUsage | TurnEnded
