"""Where OpenHands persists a conversation and its sub-agents (openhands-sdk 1.58.2).

A conversation's folder holds ``events/event-NNNNN-<event id>.json``, one file per event in log
order, each written once; ``TaskManager`` persists each sub-agent it starts in
``<parent's folder>/subagents/<sub-conversation id hex>/``, the same way, at any depth.
"""

from __future__ import annotations

import os
from pathlib import Path

from openhands.sdk.conversation.persistence_const import EVENT_NAME_RE, EVENTS_DIR

SUBAGENTS_DIR = "subagents"


def event_files(folder: Path) -> list[tuple[int, str]]:
    """(index, file name) of a persisted conversation's event files, in order."""
    try:
        names = os.listdir(folder / EVENTS_DIR)
    except OSError:
        return []
    found = []
    for name in names:
        match = EVENT_NAME_RE.match(name)
        if match:
            found.append((int(match["idx"]), name))
    return sorted(found)


def subagent_folders(conversation_dir: Path) -> list[Path]:
    """Every sub-agent folder of a conversation, parents before their sub-agents."""
    found, todo = [], [conversation_dir]
    while todo:
        folder = todo.pop(0)
        try:
            children = sorted(p for p in (folder / SUBAGENTS_DIR).iterdir() if p.is_dir())
        except OSError:
            continue
        found.extend(children)
        todo.extend(children)
    return found
