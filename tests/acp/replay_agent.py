"""An ACP agent that replays a recorded transcript: a real peer's session, offline.

Run as ``python replay_agent.py TRANSCRIPT.jsonl``. Each request the client sends is answered
as the recorded agent answered the same method (the n-th ``session/prompt`` by the n-th
recorded one): first every message the agent sent after that request (its session updates),
then the recorded response, with the client's request id. A method the transcript never saw
gets an empty result; notifications from the client (``session/cancel``) are ignored.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict, deque
from typing import Any


def exchanges(path: str) -> dict[str, deque[list[dict[str, Any]]]]:
    """Per method, in recorded order: the agent's messages from that request to its response."""
    found: dict[str, deque[list[dict[str, Any]]]] = defaultdict(deque)
    current: list[dict[str, Any]] | None = None
    with open(path) as transcript:
        for line in transcript:
            entry = json.loads(line)
            message = entry.get("msg") or {}
            if entry.get("dir") == "client->agent" and "method" in message and "id" in message:
                current = []
                found[message["method"]].append(current)
            elif entry.get("dir") == "agent->client" and current is not None:
                current.append(message)
    return found


def main() -> None:
    recorded = exchanges(sys.argv[1])
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if "id" not in request or "method" not in request:
            continue  # a notification, or the client's answer to a request we never make
        queue = recorded.get(request["method"])
        messages = queue.popleft() if queue else [{"jsonrpc": "2.0", "id": None, "result": {}}]
        for message in messages:
            if "method" not in message and "id" in message:
                message = {**message, "id": request["id"]}
            out.write(json.dumps(message) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
