"""Event schema versions a client may declare (``event_schema=1|2``).

Schema 2 is the stored JSON as it is. Schema 1 predates the ``cancelled`` tool-call status: such
a client gets ``failed`` where it would get ``cancelled`` (the top-level ``status`` of an
``ObservationEvent`` or ``ACPToolCallEvent``), every other byte unchanged.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from ..events import EventRecord

EventSchema = Literal[1, 2]
CURRENT_SCHEMA: EventSchema = 2

_TOOL_CALL_KINDS = frozenset({"ObservationEvent", "ACPToolCallEvent"})
_CANCELLED = '"status":"cancelled"'
_SPACE = re.compile(r"[ \t\n\r]*")
_decoder = json.JSONDecoder()


def wire_json(record: EventRecord, schema: EventSchema) -> str:
    """The frame to send ``record`` as, for a client of ``schema``."""
    if schema >= CURRENT_SCHEMA or record.kind not in _TOOL_CALL_KINDS or _CANCELLED not in record.json:
        return record.json
    return replace_top_level(record.json, "status", "cancelled", "failed")


def replace_top_level(text: str, key: str, old: object, new: object) -> str:
    """``text`` (a JSON object) with top-level ``key``'s value replaced by ``new`` when it equals
    ``old``; every other byte kept. Nested objects with the same key are left alone."""
    pos = _SPACE.match(text).end()
    if text[pos : pos + 1] != "{":
        return text
    pos = _SPACE.match(text, pos + 1).end()
    while pos < len(text) and text[pos] == '"':
        name, pos = json.decoder.scanstring(text, pos + 1)
        pos = _SPACE.match(text, pos).end() + 1  # past the colon
        start = _SPACE.match(text, pos).end()
        value, end = _decoder.raw_decode(text, start)
        if name == key:
            return text[:start] + json.dumps(new) + text[end:] if value == old else text
        pos = _SPACE.match(text, end).end()
        if text[pos : pos + 1] == ",":
            pos = _SPACE.match(text, pos + 1).end()
    return text
