"""What an ACP session's queue holds: every message the agent sent, in wire order."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

IncomingKind = Literal["update", "permission", "prompt_done", "exited"]


@dataclass(frozen=True, slots=True)
class Incoming:
    """One item of the session's queue, in wire order."""

    kind: IncomingKind
    payload: Any = None
    """``update``/``permission``: the request's params; ``prompt_done``: the prompt task;
    ``exited``: the exit code."""
    answer: asyncio.Future[str | None] | None = None
    """``permission`` with ``permissions: "ask"``: the answer the peer waits for. Set it to the
    chosen ``optionId`` (as the peer offered it), or ``None`` for a ``cancelled`` outcome."""


def unanswered(items: list[Incoming]) -> None:
    """Answer the permission requests among ``items`` ``cancelled``: they come too late to ask."""
    for item in items:
        if item.answer is not None and not item.answer.done():
            item.answer.set_result(None)


def is_subagent_update(item: Incoming) -> bool:
    """Whether ``item`` is a subagents-RFD ``subagent_update`` (a child session's state)."""
    update = item.payload.get("update") if item.kind == "update" else None
    return isinstance(update, dict) and update.get("sessionUpdate") == "subagent_update"
