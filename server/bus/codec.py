"""How ``EventRecord``\\s travel between processes: several records of one topic per message.

A message is lines: the publishing process's tag, then two lines per record, a compact JSON
header (the routing fields) and the event's stored JSON as it is (never parsed or
re-serialized on the way). Neither holds a raw newline: compact JSON escapes it in strings.
Sending a burst of records as a few messages instead of one each is what lets one Redis
connection carry tens of thousands of events a second.
"""

from __future__ import annotations

import json
from typing import Iterable, Iterator

from ..events import EventRecord

MAX_MESSAGE = 256 * 1024
"""Bytes after which a message is closed and the next record starts another (Redis limits
what a subscriber may have waiting)."""


def encode_records(origin: str, records: Iterable[EventRecord]) -> Iterator[bytes]:
    """Messages carrying ``records`` (in order), tagged with the ``origin`` process."""
    head = origin.encode()
    parts, size = [head], len(head)
    for record in records:
        header = json.dumps(
            [record.root_id, record.conversation_id, record.seq, record.prev_seq, record.id, record.kind,
             record.source, record.timestamp, record.subagent_id, record.parent_tool_use_id],
            separators=(",", ":"),
        ).encode()
        body = record.json.encode()
        if len(parts) > 1 and size + len(header) + len(body) > MAX_MESSAGE:
            yield b"\n".join(parts)
            parts, size = [head], len(head)
        parts += (header, body)
        size += len(header) + len(body) + 2
    if len(parts) > 1:
        yield b"\n".join(parts)


def decode_records(message: bytes) -> tuple[str, list[EventRecord]]:
    """The origin and the records of a message made by ``encode_records``."""
    lines = message.split(b"\n")
    records = []
    for header, body in zip(lines[1::2], lines[2::2]):
        root_id, conversation_id, seq, prev_seq, event_id, kind, source, timestamp, subagent_id, ptu = (
            json.loads(header)
        )
        records.append(
            EventRecord(
                root_id=root_id, conversation_id=conversation_id, seq=seq, id=event_id, kind=kind,
                source=source, timestamp=timestamp, subagent_id=subagent_id, parent_tool_use_id=ptu,
                json=body.decode(), prev_seq=prev_seq,
            )
        )
    return lines[0].decode(), records
