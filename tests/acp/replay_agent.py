"""An ACP agent that replays a recorded transcript: a real peer's session, offline.

Run as ``python replay_agent.py TRANSCRIPT.jsonl``. Each request the
client sends is answered as the recorded agent answered the same method (the n-th
``session/prompt`` by the n-th recorded one): first every message the agent sent after that
request (its session updates), then the recorded response, with the client's request id. A
method the transcript never saw gets an empty result; notifications from the client
(``session/cancel``) are ignored.

A request the agent made in the recording (``session/request_permission``) is sent, and the
replay waits for the client's answer to it before going on, as the real agent did; each answer
is appended to ``$REPLAY_ANSWERS`` (one JSON line: the request's id and the client's result),
so a test can check what the peer received. Every request and notification the client sends
is appended to ``$REPLAY_REQUESTS`` (if set), one JSON line each. Its pid goes to ``$FAKE_AGENT_PID_FILE`` (if set),
so a test can kill it while a request waits.
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict, deque
from typing import Any, Iterator


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


class Replay:
    def __init__(self, transcript: str) -> None:
        self.recorded = exchanges(transcript)
        self.lines: Iterator[str] = iter(sys.stdin)
        self.held: deque[dict[str, Any]] = deque()
        """Client requests read while waiting for an answer, served next."""
        self.answers = os.environ.get("REPLAY_ANSWERS")
        self.requests = os.environ.get("REPLAY_REQUESTS")

    def read(self) -> dict[str, Any] | None:
        for line in self.lines:
            if line.strip():
                message = json.loads(line)
                if self.requests and "method" in message:
                    with open(self.requests, "a") as out:
                        out.write(json.dumps(message) + "\n")
                return message
        return None

    def send(self, message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def ask(self, request: dict[str, Any]) -> None:
        """Send one of the agent's own requests and wait for the client's answer to it."""
        self.send(request)
        while (message := self.read()) is not None:
            if message.get("id") == request["id"] and "method" not in message:
                if self.answers:
                    with open(self.answers, "a") as out:
                        out.write(json.dumps({"id": request["id"], "result": message.get("result")}) + "\n")
                return
            if "method" in message and "id" in message:
                self.held.append(message)
        sys.exit(0)  # the client went away while we waited

    def serve(self) -> None:
        while True:
            request = self.held.popleft() if self.held else self.read()
            if request is None:
                return
            if "id" not in request or "method" not in request:
                continue  # a notification, or a late answer to one of our requests
            queue = self.recorded.get(request["method"])
            messages = queue.popleft() if queue else [{"jsonrpc": "2.0", "id": None, "result": {}}]
            for message in messages:
                if "method" in message and "id" in message:
                    self.ask(message)
                    continue
                if "method" not in message and "id" in message:
                    message = {**message, "id": request["id"]}
                self.send(message)


def main() -> None:
    pid_file = os.environ.get("FAKE_AGENT_PID_FILE")
    if pid_file:
        with open(pid_file, "a") as out:
            out.write(f"{os.getpid()}\n")
    Replay(sys.argv[1]).serve()


if __name__ == "__main__":
    main()
