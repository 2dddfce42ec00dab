"""``taskwire_openhands.receiver.stamped_events`` against the agent-server: prints ``ready``
once the socket is open, then writes every ``(parent_tool_use_id, subagent_id, event)`` it
yields until the root's run ends. Runs in the OpenHands venv.

    python receive.py SERVER_URL CONVERSATION_ID OUT_JSONL
"""

from __future__ import annotations

import asyncio
import json
import sys

from openhands.sdk.event import ConversationStateUpdateEvent, Event

from taskwire_openhands.receiver import StampedEvent, stamped_events


def ends_run(item: StampedEvent) -> bool:
    event = item.event
    return (item.parent_tool_use_id is None and isinstance(event, ConversationStateUpdateEvent)
            and event.key == "execution_status" and event.value in ("finished", "error"))


async def main() -> None:
    server_url, conversation_id, out = sys.argv[1:4]
    with open(out, "w", buffering=1) as f:
        async for parent_tool_use_id, subagent_id, event in stamped_events(server_url, conversation_id):
            assert isinstance(event, Event)
            if isinstance(event, ConversationStateUpdateEvent) and event.key == "full_state":
                print("ready", flush=True)
            f.write(json.dumps({"parent_tool_use_id": parent_tool_use_id, "subagent_id": subagent_id,
                                "class": f"{type(event).__module__}.{type(event).__name__}",
                                "event": event.model_dump(mode="json", exclude_none=True)}) + "\n")
            if ends_run(StampedEvent(parent_tool_use_id, subagent_id, event)):
                return


if __name__ == "__main__":
    asyncio.run(main())
