"""Permissions through a bridged ACP peer (``permissions: "ask"``): how fast the peer's
``session/request_permission`` reaches the person, and an answer reaches the peer.

A bare ACP peer (``bench/acp_permission_peer.py``) runs ``--calls`` calls one after another,
each asking and waiting; a socket client on the root answers each request as its frame
arrives, with a REST POST naming the peer's ``optionId``:

- request from peer → root socket: from the time the peer sent the request (in its
  ``rawInput``) to its frame on the client; beside it, the same for the call's ``tool_call``
  update sent just before it (any peer event's delivery: the ceiling this path should match);
- answer POST → peer receives ``optionId``: from sending the POST to the time the peer read
  the answer; beside it, the round trip of a POST to a request that does not exist (the same
  route, no work: the ceiling).

One server (SQLite, in-process bus), forwarding on. Figures only; nothing is asserted.

    .venv/bin/python bench/acp_peer_permissions.py [--calls 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx
import websockets
from common import ROOT, isolated_settings, taskwire_server
from permissions import answer_timed, quantiles
from rich.console import Console
from rich.table import Table

PEER = ROOT / "bench" / "acp_permission_peer.py"


async def run(folder: Path, calls: int) -> dict[str, list[float]]:
    received_path = folder / "received.jsonl"
    figures: dict[str, list[float]] = {"request": [], "update": [], "answer": [], "noop": []}
    posted: dict[str, float] = {}
    seen: set[str] = set()
    agent = {"kind": "acp", "command": sys.executable, "args": [str(PEER), str(calls), str(received_path)],
             "permissions": "ask", "session_mode": None}
    async with taskwire_server(isolated_settings(folder, forward_subagent_events=True)) as server:
        cid = (await server.runtime.create(agent)).id
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client, \
                websockets.connect(f"{server.ws_url}/sockets/events/{cid}", max_size=None) as socket:
            await client.post(f"/api/conversations/{cid}/events", json={"content": "go"})
            path = f"/api/conversations/{cid}/permissions"
            async for message in socket:
                now = time.time()
                frame = json.loads(message)
                kind = frame.get("kind")
                if kind == "ACPToolCallEvent" and frame["tool_call_id"] not in seen:
                    seen.add(frame["tool_call_id"])  # its first event: the peer's tool_call
                    figures["update"].append(now - frame["raw_input"]["sent"])
                elif kind == "PermissionRequestEvent":
                    figures["request"].append(now - frame["arguments"]["sent"])
                    await answer_timed(client, path, frame, {"option_id": "yes-once"}, figures, posted)
                elif kind == "ConversationStateUpdateEvent" and frame.get("key") == "status" \
                        and frame.get("value") in ("finished", "error"):
                    break
    for line in received_path.read_text().splitlines():
        entry = json.loads(line)
        assert entry["option"] == "yes-once", entry
        figures["answer"].append(entry["received"] - posted[entry["call"]])
    assert len(figures["answer"]) == calls, f"{len(figures['answer'])} of {calls} answers reached the peer"
    return figures


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="permission requests in the run")
    calls = parser.parse_args().calls
    console = Console(width=max(120, Console().width))
    console.log(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {calls} requests from a bridged peer")
    with tempfile.TemporaryDirectory() as tmp:
        figures = await run(Path(tmp), calls)
    columns = {
        "request from peer → root socket": "request",
        "ceiling: peer's tool_call → socket": "update",
        "answer POST → peer receives optionId": "answer",
        "ceiling: POST to an unknown request": "noop",
    }
    table = Table(title=f"acp permissions: {calls} requests from a peer, each answered over REST (ms p50 / p99)")
    for column in columns:
        table.add_column(column, justify="right")
    table.add_row(*(quantiles(figures[key]) for key in columns.values()))
    console.print(table)

if __name__ == "__main__":
    asyncio.run(main())
