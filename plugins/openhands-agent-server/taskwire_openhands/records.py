"""The stamp of a sub-agent, kept beside what OpenHands persists for it.

OpenHands persists each sub-agent's events in ``<parent>/subagents/<id hex>/events/`` but not
which ``task`` call spawned it (its task ids restart with every ``TaskManager``). So the plugin
writes one small file into that folder, ``taskwire-subagent.json``, when the sub-agent's first
event is forwarded: its runs, each with its stamp and the id of its first event (a resumed task
is a second run of the same sub-agent under the call that resumed it). The search reads it with
OpenHands' own files, after a restart too.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from .stamping import Stamp

RECORD = "taskwire-subagent.json"
_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class Run:
    """One run of a sub-agent: its stamp, from its first event on."""

    stamp: Stamp
    first_event_id: str


def record_run(stamp: Stamp, first_event_id: str) -> None:
    """Add a run to the sub-agent's record (nothing if it has no folder or the run is there)."""
    if not stamp.persistence_dir:
        return
    folder = Path(stamp.persistence_dir)
    run = Run(stamp, first_event_id)
    with _LOCK:
        runs = read_runs(folder)
        if any(r.stamp.parent_tool_use_id == stamp.parent_tool_use_id for r in runs):
            return
        folder.mkdir(parents=True, exist_ok=True)
        temporary = folder / f".{RECORD}.{os.getpid()}.tmp"
        temporary.write_text(json.dumps({"runs": [asdict(r) for r in [*runs, run]]}))
        os.replace(temporary, folder / RECORD)


def read_runs(folder: Path) -> list[Run]:
    """The runs recorded for the sub-agent persisted in ``folder`` (none: not forwarded)."""
    try:
        data = json.loads((folder / RECORD).read_text())
        return [Run(Stamp(**{**r["stamp"], "ancestry": tuple(r["stamp"]["ancestry"])}), r["first_event_id"])
                for r in data["runs"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []
