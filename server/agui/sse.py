"""Server-Sent Events framing of AG-UI events, without I/O.

One AG-UI event is one SSE event: an ``id:`` line (the ``seq`` the stream is complete
through, see ``AguiProjection``) and one ``data:`` line of JSON. JSON never holds a raw
newline (``json.dumps`` escapes them), so one ``data:`` line always suffices.
"""

from __future__ import annotations

import json
from typing import Iterable, Mapping

from ..errors import BadRequest

KEEPALIVE = b": keepalive\n\n"
"""A comment line: proxies see traffic on an idle stream, clients ignore it."""

MEDIA_TYPE = "text/event-stream"

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


def encode_frames(frames: Iterable[tuple[int, Mapping[str, object]]]) -> bytes:
    """``(id, event)`` pairs as SSE bytes, ready to write."""
    return "".join(f"id: {sse_id}\ndata: {_encode(event)}\n\n" for sse_id, event in frames).encode()


def parse_last_event_id(value: str | None) -> int | None:
    """The ``seq`` a ``Last-Event-ID`` header names (``None`` without one). An id this
    server never sent is a client mistake: ``BadRequest`` (``invalid_last_event_id``)."""
    if value is None or value.strip() == "":
        return None
    text = value.strip()
    if not text.isdigit() or len(text) > 18:
        raise BadRequest(
            f"Last-Event-ID {value[:40]!r} is not an id this server sent (they are non-negative integers)",
            code="invalid_last_event_id",
        )
    return int(text)
