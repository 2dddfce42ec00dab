"""Sub-agent types: Markdown files with YAML front matter.

Sources, lowest precedence first (a later source's type replaces an earlier one of the same
name): built-ins in ``config/agents/``, bundled plugins in ``plugins/*/agents/``, plugin folders
from ``OH_PLUGIN_DIRS``, then the project's ``<workspace>/.agents/agents/``.

Front matter: ``name`` (default: the file's stem), ``description``, ``tools`` (a list or a
comma-separated string; default all), ``model``, ``max_iterations``, ``max_cost_usd``,
``max_tokens``, ``max_seconds`` (budgets, docs/subagents.md), ``approval`` (``never``,
``always`` or tool names: added to the parent's policy, never taking from it), and ``agent`` (a
backend spec such as ``{kind: acp, command: ..., args: [...]}`` for a type that runs an external
agent). The body is the system prompt.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

import yaml

from ..permissions.policy import NEVER, Approval, parse_approval
from ..resources import CONFIG_DIR, PLUGINS_DIR, PROJECT_ROOT  # noqa: F401  (PROJECT_ROOT: tests read it here)

log = logging.getLogger(__name__)

BUILTIN_DIR = CONFIG_DIR / "agents"
BUNDLED_PLUGINS_DIR = PLUGINS_DIR


@dataclass(slots=True)
class SubagentType:
    """One kind of sub-agent."""

    name: str
    description: str
    system_prompt: str
    source: str
    """``builtin``, ``plugin:<name>`` or ``project``."""
    path: str
    tools: list[str] | None = None
    """Tool names it may use; ``None`` means all."""
    model: str | None = None
    max_iterations: int | None = None
    agent: dict[str, Any] | None = None
    """A backend spec (``kind: acp`` / ``claude_sdk``) for types that run an external agent."""
    approval: Approval = NEVER
    """What this type adds to its parent's approval policy."""
    budget: dict[str, float] = field(default_factory=dict)
    """Its budgets (``max_cost_usd``, ``max_tokens``, ``max_seconds``), over it and its own sub-agents."""
    extra: dict[str, Any] = field(default_factory=dict)

    def public(self) -> dict[str, Any]:
        """What ``GET /api/sub-agents`` shows."""
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "tools": self.tools,
            "model": self.model,
            "backend": (self.agent or {}).get("kind", "native"),
            "approval": self.approval.spec(),
            **self.budget,
        }


def parse_agent_file(path: Path, source: str) -> SubagentType:
    """Read one Markdown agent definition; raises ``ValueError`` with the reason."""
    text = path.read_text()
    meta: dict[str, Any] = {}
    body = text
    if text.startswith("---"):
        _, _, rest = text.partition("\n")
        head, sep, body = rest.partition("\n---")
        if not sep:
            raise ValueError(f"{path}: front matter is not closed with ---")
        body = body.partition("\n")[2]
        meta = yaml.safe_load(head) or {}
        if not isinstance(meta, dict):
            raise ValueError(f"{path}: front matter must be a mapping")
    tools = meta.get("tools")
    if isinstance(tools, str):
        tools = [t.strip() for t in tools.split(",") if t.strip()]
    try:
        approval = parse_approval(meta.get("approval"))
        budget = parse_budget(meta)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return SubagentType(
        name=str(meta.get("name") or path.stem),
        description=str(meta.get("description") or ""),
        system_prompt=body.strip(),
        source=source,
        path=str(path),
        tools=tools,
        model=meta.get("model"),
        max_iterations=meta.get("max_iterations"),
        agent=meta.get("agent"),
        approval=approval,
        budget=budget,
        extra={k: v for k, v in meta.items() if k not in {"name", "description", "tools", "model", "max_iterations", "agent",
                                                           "approval", *BUDGET_FIELDS}},
    )


BUDGET_FIELDS = ("max_cost_usd", "max_tokens", "max_seconds")


def parse_budget(meta: dict[str, Any]) -> dict[str, float]:
    """A type's budgets from its front matter: positive numbers (``max_tokens`` whole)."""
    budget: dict[str, float] = {}
    for name in BUDGET_FIELDS:
        value = meta.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ValueError(f"{name} must be a positive number, not {value!r}")
        if name == "max_tokens" and value != int(value):
            raise ValueError(f"max_tokens must be a whole number, not {value!r}")
        budget[name] = int(value) if name == "max_tokens" else value
    return budget


@lru_cache(maxsize=4096)
def _parsed(path: str, source: str, mtime_ns: int, size: int) -> SubagentType:
    """``parse_agent_file``, once per version of the file (its modification time and size are in
    the key). Every ``task`` call lists the types: parsing each file's YAML every time was a
    sixth of the server's work with many trees at once (``bench/many.py``)."""
    return parse_agent_file(Path(path), source)


def _load_dir(folder: Path, source: str) -> Iterable[SubagentType]:
    if not folder.is_dir():
        return
    for path in sorted(folder.glob("*.md")):
        try:
            stat = path.stat()
            yield _parsed(str(path), source, stat.st_mtime_ns, stat.st_size)
        except OSError as exc:  # removed between the listing and the read
            log.warning("skipping sub-agent definition %s: %s", path, exc)
        except (ValueError, yaml.YAMLError) as exc:
            # A broken definition must not take the others down; it is logged and skipped.
            log.warning("skipping sub-agent definition %s: %s", path, exc)


def _plugin_agents(plugins_dir: Path) -> Iterable[SubagentType]:
    """Agents of every plugin under ``plugins_dir`` (or of ``plugins_dir`` itself if it is one)."""
    candidates = [plugins_dir] if (plugins_dir / ".claude-plugin").is_dir() else sorted(plugins_dir.glob("*"))
    for plugin in candidates:
        manifest = plugin / ".claude-plugin" / "plugin.json"
        if not manifest.is_file():
            continue
        yield from _load_dir(plugin / "agents", f"plugin:{plugin.name}")


def builtin_sources(plugin_dirs: Iterable[Path] = ()) -> list[Callable[[Path | None], Iterable[SubagentType]]]:
    """The built-in sources in precedence order: config, bundled plugins, plugin dirs, project."""
    extra = [Path(d) for d in plugin_dirs]
    return [
        lambda workspace: _load_dir(BUILTIN_DIR, "builtin"),
        lambda workspace: _plugin_agents(BUNDLED_PLUGINS_DIR),
        *[(lambda workspace, d=d: _plugin_agents(d)) for d in extra],
        lambda workspace: _load_dir(workspace / ".agents" / "agents", "project") if workspace else (),
    ]
