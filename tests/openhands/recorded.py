"""Recorded OpenHands driver output, as the dispatcher sees it, and a log of its actions by lane.

- ``two_subagents.events.jsonl``: the shared fixture (/work/shared/fixtures/openhands), a real
  1.58.2 run recorded with the same visualizer trick before the driver existed.
- ``three_subagents.driver.jsonl``: ``server/openhands/driver.py``'s own stdout for
  ``scripts/three_subagents.yaml`` served by ``taskwire mock-llm`` (OpenAI dialect), workspace
  with ``.agents/agents/reviewer.md``: one ``configure`` then one ``message`` line on its stdin.
  Recorded in protocol v1 (one process a conversation); the lines were carried to v2 as they
  are, with the ``conversation`` each v2 report names and the process's ``started`` line.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from taskwire.openhands.dispatch import Action, Emit, FinishLane, Lane, RunEnded, StartLane
from taskwire.openhands.protocol import Report, parse_line

HERE = Path(__file__).parent


def fixture_reports(path: Path) -> list[Report]:
    """The shared fixture's lines (recorded before the driver's protocol existed: no ``type``,
    the stamp only) as the driver reports them."""
    reports = []
    for line in path.read_text().splitlines():
        data = json.loads(line)
        parent = data["parent_tool_use_id"]
        reports.append(Report("event", data["seq"], {**data, "type": "event", "ancestry": [parent] if parent else []}))
    return reports


def driver_reports(path: Path) -> list[Report]:
    """A driver's own output, recorded."""
    return [parse_line(line) for line in path.read_text().splitlines() if line.strip()]


class ActionLog:
    """What the dispatcher asked for, by lane."""

    def __init__(self) -> None:
        self.by_lane: dict[Lane, list[Action]] = defaultdict(list)
        self.order: list[Action] = []

    def add(self, actions: list[Action]) -> None:
        for action in actions:
            self.order.append(action)
            self.by_lane[getattr(action, "lane", None)].append(action)

    def kinds(self, lane: Lane) -> list[str]:
        return [a.event.kind if isinstance(a, Emit) else type(a).__name__ for a in self.by_lane[lane]]

    def events(self, lane: Lane) -> list[Any]:
        return [a.event for a in self.by_lane[lane] if isinstance(a, Emit)]

    def started(self) -> dict[str, StartLane]:
        return {a.lane: a for a in self.order if isinstance(a, StartLane)}

    def finished(self) -> dict[str, FinishLane]:
        return {a.lane: a for a in self.order if isinstance(a, FinishLane)}

    def run_ends(self) -> list[RunEnded]:
        return [a for a in self.order if isinstance(a, RunEnded)]
