"""Write the workload as the OpenHands agent-server stores it: one JSON file per event.

Runs in the peer's own venv (``bench/peers/.venv-openhands``), never in taskwire's. Each
event is built with the SDK's own classes (``MessageEvent``, ``ActionEvent`` with a
``TerminalAction``, ``ObservationEvent`` with a ``TerminalObservation``) and written the way
the SDK's ``EventLog.append`` writes it: ``model_dump_json(exclude_none=True)`` into
``events/event-{index:05d}-{id}.json``, each event's ``parent_id`` the one before it, and the
log's length marker at the end. The events go after those the server already wrote (its
``SystemPromptEvent``, which the SDK requires before any user message, and the first message). ``EventLog.append`` itself is not called: it keeps every event
in a cache (gigabytes at a million) and takes a file lock per event.

    python -P openhands_events.py CONVERSATION_DIR --events N

Prints one JSON line: events written, bytes, and the ids where the bench's pages start.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from pathlib import Path

from openhands.sdk import Message, TextContent
from openhands.sdk.conversation.event_store import LENGTH_MARKER_PATTERN
from openhands.sdk.conversation.persistence_const import EVENT_FILE_PATTERN, EVENT_NAME_RE, EVENTS_DIR
from openhands.sdk.event import ActionEvent, MessageEvent, ObservationEvent
from openhands.sdk.llm import MessageToolCall
from openhands.tools.terminal import TerminalAction, TerminalObservation

# Run with ``python -P``: this folder also holds ``openhands.py`` (the bench), which would
# otherwise shadow the SDK's package; the folder goes last, for ``workload`` only.
sys.path.append(str(Path(__file__).resolve().parent))
from workload import item, middle_index  # noqa: E402


def build(i: int, parent_id: str | None, action_ids: dict[str, str]):  # type: ignore[no-untyped-def]
    """The SDK event for the workload's i-th item."""
    spec = item(i)
    if spec.kind in ("message", "answer"):
        role, source = ("user", "user") if spec.kind == "message" else ("assistant", "agent")
        return MessageEvent(source=source, parent_id=parent_id,
                            llm_message=Message(role=role, content=[TextContent(text=spec.text)]))
    if spec.kind == "action":
        event = ActionEvent(
            parent_id=parent_id,
            thought=[TextContent(text=spec.thought)],
            action=TerminalAction(command=spec.text),
            tool_name="terminal",
            tool_call_id=spec.call_id,
            tool_call=MessageToolCall(id=spec.call_id, name="terminal", arguments=json.dumps({"command": spec.text}), origin="completion"),
            llm_response_id=str(uuid.uuid4()),
        )
        action_ids[spec.call_id] = event.id
        return event
    return ObservationEvent(
        parent_id=parent_id,
        observation=TerminalObservation.from_text(spec.text, command=item(i - 1).text, exit_code=0),
        action_id=action_ids.pop(spec.call_id),
        tool_name="terminal",
        tool_call_id=spec.call_id,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("conversation_dir", type=Path)
    parser.add_argument("--events", type=int, required=True)
    args = parser.parse_args()
    folder = args.conversation_dir / EVENTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    existing = sorted((int(m["idx"]), m["event_id"]) for m in map(EVENT_NAME_RE.match, os.listdir(folder)) if m)
    offset = len(existing)
    parent_id: str | None = existing[-1][1] if existing else None
    for marker in folder.glob(LENGTH_MARKER_PATTERN.format(length="*")):
        marker.unlink()
    action_ids: dict[str, str] = {}
    total = 0
    middle = middle_index(args.events)
    ids: dict[str, str] = {}
    for i in range(args.events):
        event = build(i, parent_id, action_ids)
        payload = event.model_dump_json(exclude_none=True)
        (folder / EVENT_FILE_PATTERN.format(idx=offset + i, event_id=event.id)).write_text(payload)
        total += len(payload)
        parent_id = event.id
        if i == middle:
            ids["middle"] = event.id
    (folder / LENGTH_MARKER_PATTERN.format(length=offset + args.events)).write_text("")
    os.sync()
    print(json.dumps({"events": args.events, "before": offset, "bytes": total, "ids": ids}), flush=True)


if __name__ == "__main__":
    main()
