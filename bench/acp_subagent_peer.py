"""A bare ACP agent for ``bench/acp_subagents.py`` that serves its sub-agents as child sessions
(the subagents RFD), as claude-agent-acp does for a client that declared the capability.

    python acp_subagent_peer.py ROUNDS

Each prompt runs ``ROUNDS`` rounds. A round announces three children (``r<N>-0..2``, each
launched by ``launch-<N>-<i>``), delegates to each, and has each start one call (its
``rawInput.sent``: the wall-clock time it was sent). Then it waits for ``session/cancel``
naming a child: that child reports ``idle``/``cancelled`` at once, and the other two finish
(``end_turn`` and their answers). Plain JSON-RPC over stdio, so the peer costs next to nothing.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from acp_permission_peer import read, serve, update  # the same bare JSON-RPC over stdio

ROOT = "bench-root"


def state(child: str, value: dict[str, Any]) -> None:
    update(ROOT, {"sessionUpdate": "subagent_update", "sessionId": child, "state": value})


def round_(n: int) -> bool:
    children = [f"r{n}-{i}" for i in range(3)]
    for i, child in enumerate(children):
        launch = f"launch-{n}-{i}"
        update(ROOT, {"sessionUpdate": "subagent_update", "sessionId": child, "title": f"Work {n}.{i}",
                      "description": "general-purpose", "capabilities": {"cancel": {}}, "state": {"state": "running"}})
        update(ROOT, {"sessionUpdate": "session_message", "messageId": launch, "senderSessionId": ROOT,
                      "recipientSessionId": child, "recipientMessageId": launch, "content": [{"type": "text", "text": f"do {n}.{i}"}]})
    for i, child in enumerate(children):
        meta = {"claudeCode": {"toolName": "Bash", "parentToolUseId": f"launch-{n}-{i}"}}
        update(child, {"sessionUpdate": "tool_call", "toolCallId": f"call-{n}-{i}", "title": "work", "kind": "execute",
                       "status": "in_progress", "rawInput": {"sent": time.time()}, "_meta": meta})
    while (message := read()) is not None:
        if message.get("method") == "session/cancel" and message["params"]["sessionId"] in children:
            break
    if message is None:
        return False
    cancelled = message["params"]["sessionId"]
    state(cancelled, {"state": "idle", "stopReason": "cancelled"})
    for i, child in enumerate(children):
        meta = {"claudeCode": {"toolName": "Bash", "parentToolUseId": f"launch-{n}-{i}"}}
        status = "failed" if child == cancelled else "completed"
        update(child, {"sessionUpdate": "tool_call_update", "toolCallId": f"call-{n}-{i}", "status": status, "rawOutput": "ok", "_meta": meta})
        if child != cancelled:
            update(child, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}, "_meta": meta})
            state(child, {"state": "idle", "stopReason": "end_turn"})
            update(ROOT, {"sessionUpdate": "session_message", "messageId": f"launch-{n}-{i}:reply", "senderSessionId": child,
                          "recipientSessionId": ROOT, "content": [{"type": "text", "text": "done"}]})
    return True


def main() -> None:
    rounds = int(sys.argv[1])
    serve(ROOT, lambda request: all(round_(n) for n in range(rounds)))


if __name__ == "__main__":
    main()
