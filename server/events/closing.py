"""The closing rule for a tool call that did not end on its own, the same in every backend.

A call dropped before it ran is ``cancelled``; one that ran but produced no result is ``failed``
(and, at the end of a normal turn, fails the turn with ``incomplete_tool_call``). The content
text is the same whatever schema a client declared.
"""

from __future__ import annotations

from typing import Literal

STOPPED_BEFORE_RUN = "The tool call was stopped before it ran."
INTERRUPTED = "The tool call was interrupted before it returned a result."


def closing_status(ran: bool) -> Literal["failed", "cancelled"]:
    """``failed`` for a call that ran, ``cancelled`` for one that never did."""
    return "failed" if ran else "cancelled"


def closing_text(ran: bool, reason: str | None = None) -> str:
    """What the model and clients read for a closed call, with the reason when one is known."""
    text = INTERRUPTED if ran else STOPPED_BEFORE_RUN
    return text if reason is None else f"{text[:-1]}: {reason}."
