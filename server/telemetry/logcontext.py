"""Which conversation, sub-agent and trace the current task works for, for log lines.

The runtime binds these when a run starts (``Runtime.drive``); tasks a run creates (its
sub-agents, its tools) inherit them, as asyncio tasks copy the context they start in. The JSON
log format (``OH_LOG_FORMAT=json``, ``server/telemetry/logs.py``) adds them to every line.
"""

from __future__ import annotations

from contextvars import ContextVar

FIELDS = ("conversation_id", "subagent_id", "trace_id")

_vars: dict[str, ContextVar[str | None]] = {name: ContextVar(f"taskwire_{name}", default=None) for name in FIELDS}


def bind(**values: str | None) -> None:
    """Set fields of ``FIELDS`` for the current task (and the tasks it starts from now on)."""
    for name, value in values.items():
        _vars[name].set(value)


def current() -> dict[str, str]:
    """The fields bound in this context that have a value."""
    found = {}
    for name, var in _vars.items():
        value = var.get()
        if value is not None:
            found[name] = value
    return found
