"""The workload both servers get: one conversation of N events, described without either's classes.

Standard library only: ``openhands_events.py`` imports it from the peer's own venv, and
``taskwire_events.py`` from taskwire's. Every hundredth event is a user message holding
``RARE_WORD`` (so a search for it matches 1 % of the log); then terminal calls and their
results, in pairs, and the agent's answer. The texts are sized so that either server's stored JSON comes to
about 1.1 KB an event (each side's real mean is printed by the bench).
"""

from __future__ import annotations

from dataclasses import dataclass

RARE_WORD = "zanzibarite"
"""A word only the user messages hold."""
MESSAGE_EVERY = 100

_FILLER = "The build step finished; the next step reads the files it wrote and checks them. "
_LINE = "drwxr-xr-x  4 user user  4096 Dec  1 12:00 "


@dataclass(frozen=True)
class Item:
    """The i-th event of the log: a user message, a terminal call, or that call's output."""

    index: int
    kind: str  # "message" (the user's) | "answer" (the agent's) | "action" | "observation"
    text: str
    """The message, the command, or the command's output."""
    call_id: str = ""
    """The tool call's id (the same for a call and its output)."""
    thought: str = ""
    """What the agent wrote before calling the tool."""


def item(i: int) -> Item:
    """The i-th event; deterministic, so both stores hold the same log.

    Blocks of ``MESSAGE_EVERY``: the user's message, 49 terminal calls each followed by its
    output, the agent's answer.
    """
    block, j = divmod(i, MESSAGE_EVERY)
    if j == 0:
        return Item(i, "message", f"Item {block}: please check the {RARE_WORD} samples again. " + _FILLER * 4)
    if j == MESSAGE_EVERY - 1:
        return Item(i, "answer", f"Done with item {block}: every step's files are there. " + _FILLER * 4)
    step = block * MESSAGE_EVERY + (j - 1) // 2
    call_id = f"call_{step:08d}"
    if j % 2 == 1:
        command = f"ls -la /workspace/project/build/step_{step} && cat /workspace/project/build/step_{step}/summary.txt"
        return Item(i, "action", command, call_id, thought=f"Step {step}: look at what the build wrote. " + _FILLER)
    output = "".join(f"{_LINE}part_{step}_{n}\n" for n in range(12)) + "exit code: 0"
    return Item(i, "observation", output, call_id)


def middle_index(count: int) -> int:
    """Where the "middle" page starts."""
    return count // 2
