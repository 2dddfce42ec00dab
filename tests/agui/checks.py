"""AG-UI's event-order rules, as @ag-ui/client's ``verifyEvents`` applies them, for the
Sans-I/O tests (the Node tests run the real one), and a small log builder."""

from __future__ import annotations

import json
from typing import Any, Iterable

from taskwire.events import Event

OPENERS = {"TEXT_MESSAGE_START": "text", "TOOL_CALL_START": "tool", "REASONING_START": "span",
           "REASONING_MESSAGE_START": "reasoning"}
CONTINUERS = {"TEXT_MESSAGE_CONTENT": "text", "TOOL_CALL_ARGS": "tool", "REASONING_MESSAGE_CONTENT": "reasoning"}
CLOSERS = {"TEXT_MESSAGE_END": "text", "TOOL_CALL_END": "tool", "REASONING_END": "span",
           "REASONING_MESSAGE_END": "reasoning"}


def _key(event: dict[str, Any], kind: str) -> tuple[str, str]:
    return kind, event["toolCallId"] if kind == "tool" else event["messageId"]


def assert_valid(events: Iterable[dict[str, Any]]) -> None:
    """Runs open and close in turn; what opens in a run closes in it, once; a sub-agent starts
    (after its parent) before anything ends it; attribution never changes within an entity."""
    open_: dict[tuple[str, str], str | None] = {}
    subagents_open: set[str] = set()
    subagents_seen: set[str] = set()
    in_run = False
    for n, event in enumerate(events):
        kind, where = event["type"], f"event {n}: {event}"
        if kind == "RUN_STARTED":
            assert not in_run, where
            in_run, open_, subagents_open, subagents_seen = True, {}, set(), set()
            continue
        assert in_run, f"outside a run: {where}"
        tag = event.get("subagentRunId")
        if kind in OPENERS:
            key = _key(event, OPENERS[kind])
            assert key not in open_, where
            open_[key] = tag
        elif kind in CONTINUERS or kind in CLOSERS:
            key = _key(event, CONTINUERS.get(kind) or CLOSERS[kind])
            assert key in open_ and open_[key] == tag, where
            if kind in CLOSERS:
                del open_[key]
        elif kind == "SUBAGENT_STARTED":
            assert tag not in subagents_seen, where
            parent = event.get("parentSubagentRunId")
            assert parent is None or parent in subagents_seen, where
            subagents_open.add(tag)
            subagents_seen.add(tag)
        elif kind in ("SUBAGENT_FINISHED", "SUBAGENT_ERROR"):
            assert tag in subagents_open, where
            subagents_open.discard(tag)
        elif kind in ("RUN_FINISHED", "RUN_ERROR"):
            assert not open_ and not subagents_open, f"{where} while open: {open_} {subagents_open}"
            in_run = False
        if tag is not None and kind not in ("SUBAGENT_STARTED",):
            assert tag in subagents_seen, f"attributed to a sub-agent never started: {where}"


class Log:
    """Records as the store hands them out: ``seq`` assigned, sub-agent events stamped."""

    def __init__(self, start: int = 0) -> None:
        self.seq = start

    def __call__(self, event: Event, subagent: str | None = None, call: str | None = None) -> str:
        if not event.ephemeral:
            self.seq += 1
            event.seq = self.seq
        if subagent is not None:
            event.subagent_id, event.parent_tool_use_id = subagent, call
        return event.to_json()


def types(frames: Iterable[tuple[int, dict[str, Any]]]) -> list[str]:
    return [event["type"] for _, event in frames]


def wire(**fields: Any) -> str:
    """A record of a kind this server does not define (a newer one's)."""
    return json.dumps(fields)
