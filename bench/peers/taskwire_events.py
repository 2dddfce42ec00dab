"""Write the workload as taskwire stores it: one conversation in SQLite, through its own store.

Events go through ``SQLiteStore.append`` in large concurrent batches (group commit), as
``bench/replay.py`` loads its million events, so whatever the store does at append (its
summaries, the search text it keeps) is done here too.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workload import item  # noqa: E402

from taskwire.events import ActionEvent, Event, MessageEvent, ObservationEvent  # noqa: E402
from taskwire.store import ConversationRecord  # noqa: E402
from taskwire.store.sqlite import SQLiteStore  # noqa: E402

CONVERSATION_ID = "peers-bench"
BATCH = 5_000  # appends in flight at once


def event_of(i: int) -> Event:
    """taskwire's event for the workload's i-th item."""
    spec = item(i)
    if spec.kind == "message":
        return MessageEvent(role="user", source="user", content=spec.text)
    if spec.kind == "answer":
        return MessageEvent(role="assistant", source="agent", content=spec.text)
    if spec.kind == "action":
        return ActionEvent(tool_name="terminal", tool_call_id=spec.call_id, arguments={"command": spec.text}, thought=spec.thought)
    return ObservationEvent(tool_name="terminal", tool_call_id=spec.call_id, content=spec.text, status="completed")


async def load(db: Path, count: int) -> str:
    """Store a finished conversation of ``count`` events in the SQLite file ``db``; its id."""
    store = SQLiteStore(f"sqlite:///{db}")
    await store.open()
    try:
        record = ConversationRecord(id=CONVERSATION_ID, root_id=CONVERSATION_ID, status="finished", agent={"kind": "native"})
        await store.create_conversation(record)
        for start in range(0, count, BATCH):
            await asyncio.gather(*(store.append(CONVERSATION_ID, CONVERSATION_ID, event_of(i))
                                   for i in range(start, min(count, start + BATCH))))
    finally:
        await store.close()
    return CONVERSATION_ID
