"""How models become stored values, shared by every store backend.

Times are stored as fixed-width ISO 8601 UTC strings with a ``Z`` (the events' wire format),
so they compare and sort as text. An event becomes an ``EventRecord`` exactly once, at append.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pydantic import TypeAdapter

from ..errors import BadRequest, ConversationNotFound
from ..events import ConversationStateUpdateEvent, Event, EventRecord, SubagentFinishedEvent
from ..events.body_text import body_text
from taskwire_client.events import _utc_z as _wire_timestamp
from .base import ConversationRecord


def timestamp_text(value: datetime) -> str:
    """``value`` as stored and as on the wire; a naive datetime is taken as UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return _wire_timestamp(value)


def event_record(conversation_id: str, root_id: str, event: Event) -> EventRecord:
    """Serialize ``event`` (its ``seq`` already set; ``None`` for an ephemeral one, which is
    only published) into the record that is stored and
    published. This is the one place an event becomes JSON, and its searched text
    (``body``)."""
    json = event.to_json()
    return EventRecord(
        root_id=root_id,
        conversation_id=conversation_id,
        seq=event.seq,
        id=event.id,
        kind=event.kind,
        source=event.source,
        timestamp=_json_timestamp(json) or _wire_timestamp(event.timestamp),
        subagent_id=event.subagent_id,
        parent_tool_use_id=event.parent_tool_use_id,
        json=json,
        body=body_text(event),
        row_update=_row_update(event),
    )


def _row_update(event: Event) -> dict[str, Any] | None:
    if isinstance(event, ConversationStateUpdateEvent) and event.key == "status" and isinstance(event.value, str):
        return {"status": event.value, "status_reason": event.reason}
    if isinstance(event, SubagentFinishedEvent):
        return {"subagent_status": event.status, "result": event.result}
    return None


def row_patch(record: EventRecord) -> ConversationPatch:
    """What an event that states fields of its conversation's record (``EventRecord.row_update``)
    writes on the row, with ``updated_at`` = the event's time."""
    assert record.row_update is not None
    return conversation_patch(record.row_update, datetime.fromisoformat(record.timestamp))


_TIMESTAMP_KEY = '"timestamp":"'


def _json_timestamp(json: str) -> str | None:
    # The JSON's own string, cut out rather than formatted again (formatting is the
    # costliest step of an append). The first match is the top-level field: it precedes
    # every nested object, and a quote inside a string value is always escaped.
    start = json.find(_TIMESTAMP_KEY)
    if start < 0:
        return None
    start += len(_TIMESTAMP_KEY)
    return json[start : json.index('"', start)]


CONVERSATION_COLUMNS = ("id", "root_id", "parent_id", "status", "created_at", "updated_at", "json")
"""The conversation table's columns, in the order ``conversation_row`` gives their values."""


def conversation_row(record: ConversationRecord) -> tuple[Any, ...]:
    """``record`` as stored: the searched fields as columns, the whole record as ``json``."""
    return (
        record.id,
        record.root_id,
        record.parent_id,
        record.status,
        timestamp_text(record.created_at),
        timestamp_text(record.updated_at),
        record.model_dump_json(),
    )


def _check_settable(fields: dict[str, Any]) -> None:
    # A typo is an error, not a field dropped silently; and a record never moves in its tree.
    unknown = set(fields) - set(ConversationRecord.model_fields)
    if unknown:
        raise TypeError(f"ConversationRecord has no field(s) {sorted(unknown)}")
    fixed = {"id", "root_id", "parent_id", "created_at", "updated_at"} & set(fields)
    if fixed:
        raise TypeError(f"a conversation's {sorted(fixed)} cannot be set")


def updated_conversation(record: ConversationRecord, fields: dict[str, Any], now: datetime) -> ConversationRecord:
    """``record`` with ``fields`` set (validated) and ``updated_at`` = ``now``.

    Raises ``TypeError`` for a field the record does not have, so a typo is not dropped
    silently, and refuses to move a record (``id``, ``root_id``, ``parent_id``) or to set its
    times (``updated_at`` is the store's).
    """
    _check_settable(fields)
    return ConversationRecord.model_validate({**record.model_dump(), **fields, "updated_at": now})


@dataclass(frozen=True, slots=True)
class ConversationPatch:
    """What an update writes, without reading the record first: each field set as the JSON
    text ``model_dump_json`` would give it, the new ``status`` column (``None``: unchanged)
    and ``updated_at``, as stored (``updated_at``) and as in the record's JSON."""

    fields: dict[str, str]
    values: dict[str, Any]
    """The fields as validated: what reading the record back would give."""
    now: datetime
    status: str | None
    updated_at: str
    updated_at_json: str


@functools.lru_cache(maxsize=None)
def _field_adapter(name: str) -> TypeAdapter[Any]:
    field = ConversationRecord.model_fields[name]
    return TypeAdapter(field.annotation)  # type: ignore[arg-type]


def conversation_patch(fields: dict[str, Any], now: datetime) -> ConversationPatch:
    """``fields`` validated one by one (only those being set) and given as JSON text, for a
    store that sets them inside the stored JSON in one statement. Raises ``TypeError`` as
    ``updated_conversation`` does, and pydantic's ``ValidationError`` for a bad value."""
    _check_settable(fields)
    texts: dict[str, str] = {}
    values: dict[str, Any] = {}
    status = None
    for name, value in fields.items():
        adapter = _field_adapter(name)
        valid = values[name] = adapter.validate_python(value)
        texts[name] = adapter.dump_json(valid).decode()
        if name == "status":
            status = valid
    return ConversationPatch(
        fields=texts,
        values=values,
        now=now,
        status=status,
        updated_at=timestamp_text(now),
        updated_at_json=_field_adapter("updated_at").dump_json(now).decode(),
    )


def check_deletable(conversation_id: str, record: ConversationRecord | None) -> None:
    """Only a root conversation is deleted (with its tree): raises ``ConversationNotFound``
    for no record, ``BadRequest`` for a sub-agent."""
    if record is None:
        raise ConversationNotFound(conversation_id)
    if not record.is_root:
        raise BadRequest(
            f"conversation {conversation_id!r} is a sub-agent of {record.root_id!r}: "
            "delete the root conversation",
            code="not_a_root_conversation",
        )
