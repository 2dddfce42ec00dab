"""Trace and span ids derived from event ids, so a span names the record it started at.

Event ids are UUIDv7 (``taskwire_client.ids``): the whole 128 bits make a trace id, the low 64
bits (62 of them random) a span id. Deriving them, rather than drawing new ones, means the same
records always give the same trace: a run's log lines carry its trace id before any span is
exported, and a span leads back to its first event.
"""

from __future__ import annotations

import uuid


def trace_id_of(event_id: str) -> int:
    """The trace id of the run whose ``running`` status event is ``event_id``."""
    return uuid.UUID(event_id).int or 1


def span_id_of(event_id: str) -> int:
    """The span id of the span that starts at event ``event_id``."""
    return (uuid.UUID(event_id).int & 0xFFFF_FFFF_FFFF_FFFF) or 1


def trace_id_hex(trace_id: int) -> str:
    """A trace id as OpenTelemetry and W3C ``traceparent`` write it: 32 hex digits."""
    return f"{trace_id:032x}"
