"""``RunSpans``: the spans of one run of one tree that ``SpanBuilder`` still holds open."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .spans import SpanData, SpanEvent


@dataclass
class RunSpans:
    """One run of one tree: its spans still open, and the ids spans are parented by."""

    trace_id: int
    agents: dict[str, SpanData] = field(default_factory=dict)
    """Open ``invoke_agent`` spans by conversation id (the root's own under the root id)."""
    tools: dict[tuple[str, str], SpanData] = field(default_factory=dict)
    """Open ``execute_tool`` spans by (conversation id, tool call id)."""
    calls: dict[tuple[str, str], int] = field(default_factory=dict)
    """Span id of every tool call of the run, open or ended: a sub-agent's parent."""
    chats: dict[str, tuple[SpanData, list[dict[str, Any]]]] = field(default_factory=dict)
    """``chat`` spans waiting for their response's text and calls (content capture only)."""
    retries: dict[str, list[SpanEvent]] = field(default_factory=dict)
    """Each conversation's retries of the model call under way: its ``chat`` span's events."""
