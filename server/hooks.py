"""Extension points. One ``Hooks`` per app (``app.state.hooks``); built-ins load through them.

- ``tools``: tools a native agent may be given, by name.
- ``subagent_sources``: functions that list sub-agent types for a workspace; later sources override earlier ones. Called once per run of a tree (its ``task`` calls share what they gave) and for each ``GET /api/sub-agents``.
- ``event_subscribers``: called with every published record (root events, and forwarded sub-agent events); must not block.
- ``record_observers``: called with every stored record of every tree this server runs, sub-agents' included whatever ``OH_FORWARD_SUBAGENT_EVENTS`` says (traces, metrics); must not block.

``tests/test_docs.py`` fails when a hook listed in ``HOOKS`` is missing from this docstring.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from .runtime.agent_types import SubagentType, builtin_sources
from .runtime.forwarding import RecordSink
from .runtime.tools import BUILTIN_TOOLS, Tool
from .settings import Settings

SubagentSource = Callable[[Path | None], Iterable[SubagentType]]
"""Given a conversation's workspace (or ``None``), the sub-agent types it contributes."""

HOOKS = ("tools", "subagent_sources", "event_subscribers", "record_observers")


@dataclass
class Hooks:
    """The registry of extension points for one server."""

    tools: dict[str, type[Tool]] = field(default_factory=dict)
    subagent_sources: list[SubagentSource] = field(default_factory=list)
    event_subscribers: list[RecordSink] = field(default_factory=list)
    record_observers: list[RecordSink] = field(default_factory=list)

    @classmethod
    def with_builtins(cls, settings: Settings) -> Hooks:
        """The built-in tools and sub-agent sources (config, bundled plugins, OH_PLUGIN_DIRS, project)."""
        return cls(tools=dict(BUILTIN_TOOLS), subagent_sources=builtin_sources(settings.plugin_dirs))

    def subagent_types(self, workspace: Path | None) -> dict[str, SubagentType]:
        """Every available type by name, later sources overriding earlier ones."""
        found: dict[str, SubagentType] = {}
        for source in self.subagent_sources:
            for agent_type in source(workspace):
                found[agent_type.name] = agent_type
        return found
