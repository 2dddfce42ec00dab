"""How a model call's retry reads to a person: ``retrying in 4 s (429), attempt 2 of 7``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def retry_line(event: Mapping[str, Any]) -> str:
    """One line for an ``LLMRetryEvent`` (its wire fields)."""
    delay = float(event.get("delay") or 0)
    wait = f"{delay:.0f} s" if delay >= 1.5 or delay == 0 else f"{delay:.1f} s"
    line = f"retrying in {wait} ({event.get('reason') or 'error'})"
    if event.get("attempt") and event.get("max_attempts"):
        line += f", attempt {event['attempt']} of {event['max_attempts']}"
    return line
