"""event_schema=1: `cancelled` becomes `failed` at the top level of tool-call events only."""

from __future__ import annotations

import json

from taskwire.events import ACPToolCallEvent, EventRecord, ObservationEvent
from taskwire.stream.schema import replace_top_level, wire_json


def record_of(event: ObservationEvent | ACPToolCallEvent) -> EventRecord:
    event.seq = 7
    return EventRecord("r", "r", 7, event.id, event.kind, event.source, "t", None, None, event.to_json())


def test_nested_status_in_raw_input_is_left_alone() -> None:
    event = ACPToolCallEvent(
        tool_call_id="c1", status="completed", raw_input={"status": "cancelled", 'a"status': "cancelled"}
    )
    record = record_of(event)
    assert wire_json(record, 1) == record.json


def test_top_level_status_changes_even_after_nested_lookalikes() -> None:
    event = ACPToolCallEvent(tool_call_id="c1", title='"status":"cancelled"', status="cancelled", raw_output={"status": "cancelled"})
    record = record_of(event)
    downgraded = wire_json(record, 1)
    assert json.loads(downgraded) == {**json.loads(record.json), "status": "failed"}
    assert len(downgraded) == len(record.json) - len("cancelled") + len("failed")


def test_other_kinds_and_schema_2_are_sent_as_stored() -> None:
    cancelled = record_of(ObservationEvent(tool_name="t", tool_call_id="c", status="cancelled"))
    assert wire_json(cancelled, 2) is cancelled.json


def test_replace_top_level_keeps_whitespace_and_order() -> None:
    text = '{ "a" : {"status": "cancelled"} , "status" :  "cancelled", "z": [1, {"status": "x"}] }'
    assert replace_top_level(text, "status", "cancelled", "failed") == (
        '{ "a" : {"status": "cancelled"} , "status" :  "failed", "z": [1, {"status": "x"}] }'
    )
    assert replace_top_level(text, "missing", "cancelled", "failed") == text
