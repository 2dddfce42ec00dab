"""A bare ACP agent for ``bench/acp_peer_permissions.py``: each prompt runs ``N`` calls one
after another, each asking ``session/request_permission`` and waiting for the answer.

    python acp_permission_peer.py N RECEIVED.jsonl

Every call's ``tool_call`` and its request carry the wall-clock time they were sent
(``rawInput.sent``); the time each answer was read goes to ``RECEIVED.jsonl`` with the
``optionId`` received. Plain JSON-RPC over stdio, so the peer itself costs next to nothing.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Callable

OPTIONS = [
    {"optionId": "yes-once", "name": "Yes", "kind": "allow_once"},
    {"optionId": "no", "name": "No", "kind": "reject_once"},
]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def update(session_id: str, body: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": body}})


def read() -> dict[str, Any] | None:
    for line in sys.stdin:
        if line.strip():
            return json.loads(line)
    return None


def turn(session_id: str, calls: int, received: Any) -> None:
    for n in range(calls):
        call_id = f"call-{n}"
        update(session_id, {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": f"step {n}",
                            "kind": "execute", "status": "pending", "rawInput": {"sent": time.time()}})
        tool_call = {"toolCallId": call_id, "title": f"step {n}", "rawInput": {"sent": time.time()}}
        send({"jsonrpc": "2.0", "id": 10_000 + n, "method": "session/request_permission",
              "params": {"sessionId": session_id, "toolCall": tool_call, "options": OPTIONS}})
        while (message := read()) is not None and message.get("id") != 10_000 + n:
            pass
        if message is None:
            sys.exit(0)
        outcome = (message.get("result") or {}).get("outcome") or {}
        received.write(json.dumps({"call": call_id, "received": time.time(), "option": outcome.get("optionId")}) + "\n")
        received.flush()
        update(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed",
                            "rawOutput": "ok"})


def serve(session_id: str, prompt: Callable[[dict[str, Any]], bool]) -> None:
    """Answer JSON-RPC requests on stdio until stdin closes: ``initialize``, ``session/new``
    (``session_id``), and ``session/prompt`` by ``prompt(request)``, which returns False once
    stdin closed under it."""
    while (request := read()) is not None:
        method, rid = request.get("method"), request.get("id")
        if rid is None or method is None:
            continue
        if method == "initialize":
            result: dict[str, Any] = {"protocolVersion": 1, "agentCapabilities": {}}
        elif method == "session/new":
            result = {"sessionId": session_id}
        elif method == "session/prompt":
            if not prompt(request):
                return
            result = {"stopReason": "end_turn"}
        else:
            result = {}
        send({"jsonrpc": "2.0", "id": rid, "result": result})


def main() -> None:
    calls, path = int(sys.argv[1]), sys.argv[2]
    with open(path, "a") as received:
        serve("bench", lambda request: turn(request["params"]["sessionId"], calls, received) or True)


if __name__ == "__main__":
    main()
