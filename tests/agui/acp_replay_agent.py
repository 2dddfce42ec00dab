"""An ACP agent that replays a recorded transcript (``{"dir", "msg"}`` lines): for each request
the client sends, the messages the real agent sent back after the same request in the
recording, verbatim (the answer takes the new request's id). So the real ACP backend drives
claude-agent-acp's recorded session exactly as it came over the wire.

    python acp_replay_agent.py TRANSCRIPT.acp.jsonl
"""

from __future__ import annotations

import json
import sys
from typing import Any


def replies(transcript: str) -> dict[str, list[dict[str, Any]]]:
    """Method -> what the agent sent after the first request of that method (answer last)."""
    lines = [json.loads(line) for line in open(transcript, encoding="utf-8") if line.strip()]
    found: dict[str, list[dict[str, Any]]] = {}
    for n, entry in enumerate(lines):
        message = entry.get("msg") or {}
        if entry.get("dir") != "client->agent" or "id" not in message or message.get("method") in found:
            continue
        sent = []
        for later in lines[n + 1 :]:
            reply = later.get("msg") or {}
            if later.get("dir") != "agent->client":
                continue
            sent.append(reply)
            if reply.get("id") == message["id"] and "method" not in reply:
                break
        found[message["method"]] = sent
    return found


def main() -> None:
    recorded = replies(sys.argv[1])
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if "id" not in request or "method" not in request:
            continue  # a notification (session/cancel) or an answer to us: nothing to say
        sent = recorded.get(request["method"])
        if sent is None:
            error = {"code": -32601, "message": f"not in the recording: {request['method']}"}
            out = [{"jsonrpc": "2.0", "id": request["id"], "error": error}]
        else:
            out = [dict(m, id=request["id"]) if "method" not in m and "id" in m else m for m in sent]
        for message in out:
            sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
