"""Claude Code-style sub-agents served as ACP child sessions (the subagents RFD): what cancelling
one costs, and what the child-session form costs against the flattened one.

- cancel one → cancelled: a bare peer (``bench/acp_subagent_peer.py``) runs ``--rounds``
  rounds of three child sessions; a socket client on the root (forwarding on) cancels the first
  child of each round with ``POST .../subagents/{id}/cancel`` once all three run, and times the
  POST to that sub-agent's ``work_state`` ``idle``/``cancelled`` frame on the socket. Beside
  it, in the same run, the ceilings: a peer event's delivery to the socket (a child's
  ``tool_call``, from the peer's clock), and the round trip of a cancel of an ended sub-agent
  (the same route answering 400 at once).
- the two forms, the same work: ``--children`` sub-agents of ``--calls`` calls each, as wire
  payloads in both forms, fed through the Sans-I/O mapping (``ChildSessions`` in front of the
  ``SessionMapper`` for the child-session form; the mapper alone for the flattened one, the
  ceiling): frames/s, events/s and CPU µs per event emitted.

    .venv/bin/python bench/acp_subagents.py [--rounds 100] [--children 300] [--calls 20]
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
from typing import Any

import httpx
import websockets
from common import ROOT, isolated_settings, taskwire_server
from permissions import quantiles
from rich.console import Console
from rich.table import Table

from taskwire.acp.child_sessions import ChildSessions
from taskwire.acp.mapping import Emit, SessionMapper

PEER = ROOT / "bench" / "acp_subagent_peer.py"
SESSION = "bench-root"


# -- cancel one ---------------------------------------------------------------------------


async def cancel_run(folder: Path, rounds: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"cancel": [], "delivery": [], "noop": []}
    agent = {"kind": "acp", "command": sys.executable, "args": [str(PEER), str(rounds)], "session_mode": None}
    subagents: dict[str, str] = {}
    running: dict[int, int] = {}
    posted: dict[str, float] = {}
    tasks: set[asyncio.Task[None]] = set()
    async with taskwire_server(isolated_settings(folder, forward_subagent_events=True)) as server:
        cid = (await server.runtime.create(agent)).id
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client, \
                websockets.connect(f"{server.ws_url}/sockets/events/{cid}", max_size=None) as socket:

            async def cancel(n: int) -> None:
                if n > 0:  # the ceiling: the same route, for the child cancelled last round
                    began = time.perf_counter()
                    ended = await client.post(f"/api/conversations/{cid}/subagents/{subagents[f'launch-{n - 1}-0']}/cancel")
                    assert ended.status_code == 400, ended.text
                    figures["noop"].append(time.perf_counter() - began)
                target = subagents[f"launch-{n}-0"]
                posted[target] = time.perf_counter()
                response = await client.post(f"/api/conversations/{cid}/subagents/{target}/cancel")
                assert response.status_code == 202, response.text

            await client.post(f"/api/conversations/{cid}/events", json={"content": "go"})
            async for message in socket:
                now, wall = time.perf_counter(), time.time()
                frame = json.loads(message)
                kind = frame.get("kind")
                if kind == "SubagentStartedEvent":
                    subagents[frame["parent_tool_use_id"]] = frame["subagent_id"]
                elif kind == "ACPToolCallEvent" and frame.get("status") == "in_progress" and frame.get("subagent_id"):
                    figures["delivery"].append(wall - frame["raw_input"]["sent"])
                    n = int(frame["tool_call_id"].split("-")[1])
                    running[n] = running.get(n, 0) + 1
                    if running[n] == 3:
                        task = asyncio.create_task(cancel(n))
                        tasks.add(task)
                        task.add_done_callback(tasks.discard)
                elif kind == "ConversationStateUpdateEvent" and frame.get("key") == "work_state" \
                        and frame["value"].get("stop_reason") == "cancelled":
                    figures["cancel"].append(now - posted[frame["subagent_id"]])
                elif kind == "ConversationStateUpdateEvent" and frame.get("key") == "status" \
                        and frame.get("value") in ("finished", "error") and not frame.get("subagent_id"):
                    assert frame["value"] == "finished", frame
                    break
    assert len(figures["cancel"]) == rounds, f"{len(figures['cancel'])} of {rounds} cancels came back"
    return figures


# -- the two forms ------------------------------------------------------------------------


def wire(children: int, calls: int, *, native: bool) -> list[dict[str, Any]]:
    """``session/update`` params of the same work in either form."""
    frames: list[dict[str, Any]] = []

    def on(session: str, body: dict[str, Any]) -> None:
        frames.append({"sessionId": session, "update": body})

    for c in range(children):
        launch, child = f"launch-{c}", f"child-{c}"
        where = child if native else SESSION
        if native:
            on(SESSION, {"sessionUpdate": "subagent_update", "sessionId": child, "title": f"Work {c}", "description": "general-purpose",
                         "capabilities": {"cancel": {}}, "state": {"state": "running"}})
            on(SESSION, {"sessionUpdate": "session_message", "messageId": launch, "senderSessionId": SESSION,
                         "recipientSessionId": child, "content": [{"type": "text", "text": f"do {c}"}]})
        else:
            on(SESSION, {"sessionUpdate": "tool_call", "toolCallId": launch, "title": f"Work {c}", "kind": "think", "status": "pending",
                         "rawInput": {"description": f"Work {c}", "prompt": f"do {c}", "subagent_type": "general-purpose"},
                         "_meta": {"claudeCode": {"toolName": "Agent"}}})
        meta = {"claudeCode": {"toolName": "Bash", "parentToolUseId": launch}}
        for k in range(calls):
            call = f"call-{c}-{k}"
            on(where, {"sessionUpdate": "tool_call", "toolCallId": call, "title": "run", "kind": "execute", "status": "pending",
                       "rawInput": {"command": f"echo {k}"}, "_meta": meta})
            on(where, {"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "completed", "rawOutput": f"{k}", "_meta": meta})
        on(where, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}, "_meta": {"claudeCode": {"parentToolUseId": launch}}})
        if native:
            on(SESSION, {"sessionUpdate": "subagent_update", "sessionId": child, "state": {"state": "idle", "stopReason": "end_turn"}})
            on(SESSION, {"sessionUpdate": "session_message", "messageId": f"{launch}:reply", "senderSessionId": child,
                         "recipientSessionId": SESSION, "content": [{"type": "text", "text": "done"}]})
        else:
            on(SESSION, {"sessionUpdate": "tool_call_update", "toolCallId": launch, "status": "completed",
                         "content": [{"type": "content", "content": {"type": "text", "text": "done"}}], "_meta": {"claudeCode": {"toolName": "Agent"}}})
    return frames


def map_form(frames: list[dict[str, Any]], *, native: bool) -> tuple[float, float, int]:
    """(wall s, CPU s, events emitted) of mapping ``frames``; the best of three."""
    best: tuple[float, float, int] | None = None
    for _ in range(3):
        mapper = SessionMapper()
        mapper.begin_turn()
        children = ChildSessions(mapper)
        children.root_session_id = SESSION
        wall, cpu = time.perf_counter(), time.process_time()
        if native:
            actions = [a for f in frames for a in children.receive(f)] + children.end_turn()
        else:
            actions = [a for f in frames for a in mapper.receive_update(f["update"])]
        actions += mapper.end_turn().actions
        took = (time.perf_counter() - wall, time.process_time() - cpu, sum(isinstance(a, Emit) for a in actions))
        best = took if best is None or took[0] < best[0] else best
    assert best is not None
    return best


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100, help="cancels (rounds of three child sessions)")
    parser.add_argument("--children", type=int, default=300, help="sub-agents in the form comparison")
    parser.add_argument("--calls", type=int, default=20, help="calls per sub-agent in the form comparison")
    args = parser.parse_args()
    console = Console(width=max(120, Console().width))
    console.log(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        figures = await cancel_run(Path(tmp), args.rounds)
    table = Table(title=f"cancel one child session ({args.rounds} cancels, ms p50 / p99)")
    table.add_column("path")
    table.add_column("p50 / p99 ms", justify="right")
    table.add_row("POST cancel → its work_state idle/cancelled on the root's socket", quantiles(figures["cancel"]))
    table.add_row("ceiling: a child's tool_call, peer → root's socket", quantiles(figures["delivery"]))
    table.add_row("ceiling: POST cancel of an ended sub-agent (400) round trip", quantiles(figures["noop"]))
    console.print(table)

    forms = Table(title=f"the two forms, the same work ({args.children} sub-agents × {args.calls} calls)")
    for column in ("form", "frames", "events", "frames/s", "events/s", "CPU µs / event"):
        forms.add_column(column, justify="right")
    for name, native in (("child sessions", True), ("flattened (ceiling)", False)):
        frames = wire(args.children, args.calls, native=native)
        wall, cpu, events = map_form(frames, native=native)
        forms.add_row(name, str(len(frames)), str(events), f"{len(frames) / wall:,.0f}", f"{events / wall:,.0f}", f"{cpu / events * 1e6:.1f}")
    console.print(forms)


if __name__ == "__main__":
    asyncio.run(main())
