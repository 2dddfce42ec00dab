"""Scripts whose sub-agents wait on gates (files) a test opens: every step awaited, never timed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class Gates:
    """Files a scripted sub-agent waits for: a test opens a gate to let that sub-agent finish."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def path(self, name: str) -> Path:
        return self.folder / f"open-{name}"

    def wait_command(self, name: str) -> str:
        # Bounded (2 min), so a test that fails early leaves no shell behind for long.
        return f"for i in $(seq 1200); do [ -f {self.path(name)} ] && break; sleep 0.1; done; echo gate {name} open"

    def open(self, *names: str) -> None:
        for name in names:
            self.path(name).touch()


def gated_subagents_script(gates: Gates, names: tuple[str, ...] = ("a", "b")) -> str:
    """The main agent starts one sub-agent per name in parallel (description ``Echo
    subagent-<name>``); each echoes ``subagent-<name>``, then waits for its gate, then finishes."""
    lanes: list[dict[str, Any]] = [
        {
            "name": f"subagent-{name}",
            "match": {"first_user_ends_with": f"Echo subagent-{name}, then wait."},
            "turns": [
                {"tool_calls": [{"name": "terminal", "arguments": {"command": f"echo subagent-{name}"}}]},
                {"tool_calls": [{"name": "terminal", "arguments": {"command": gates.wait_command(name)}}]},
                {"tool_calls": [{"name": "finish", "arguments": {"message": f"subagent-{name} done"}}]},
            ],
        }
        for name in names
    ]
    calls = [
        {"name": "task", "arguments": {"description": f"Echo subagent-{name}", "prompt": f"Echo subagent-{name}, then wait."}}
        for name in names
    ]
    lanes.append({"name": "main", "turns": [
        {"text": "Starting the sub-agents.", "tool_calls": calls},
        {"tool_calls": [{"name": "finish", "arguments": {"message": "All sub-agents are back."}}]},
    ]})
    return json.dumps({"lanes": lanes})
