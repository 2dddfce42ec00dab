"""Permissions: how fast a request reaches the person, and an answer reaches the waiting call.

A native agent's sub-agent runs ``--calls`` ``think`` calls one after another, each under an
approval policy that names ``think`` (so the tool itself costs nothing), with forwarding on. A
socket client on the root answers each request as it arrives, with a REST POST:

- request → root socket: from the request's ``timestamp`` (made on the owner) to its frame on
  the client; beside it, the same for the ``ActionEvent`` stored just before it (any event's
  delivery: the ceiling this path should match);
- answer POST → tool running: from sending the POST to the ``timestamp`` of the call's
  ``ObservationEvent`` (the tool ran at once); beside it, the round trip of a POST to a request
  that does not exist (the same route and routing to the owner, no work: the ceiling).

On one server (SQLite, in-process bus), then across two replicas (PostgreSQL + Redis): the run
on replica A (this process), the socket and the POSTs on replica B (a ``taskwire serve``
process), so every request crosses Redis and every answer goes to A over the bus. Figures
only; nothing is asserted.

    .venv/bin/python bench/permissions.py [--calls 200] [--skip-replicas]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import websockets
from common import ROOT, isolated_settings, taskwire_server
from rich.console import Console
from rich.table import Table

from tests.servers import ServerProcess

POSTGRES = os.environ.get("TASKWIRE_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
REDIS = os.environ.get("TASKWIRE_BENCH_REDIS", "redis://127.0.0.1:6379/0")


def script(calls: int) -> str:
    steps = [{"tool_calls": [{"name": "think", "arguments": {"thought": f"step {n}"}}]} for n in range(calls)]
    steps.append({"tool_calls": [{"name": "finish", "arguments": {"message": "sub done"}}]})
    return json.dumps({"usage": {"input_tokens": 1, "output_tokens": 1}, "lanes": [
        {"name": "sub", "match": {"first_user_ends_with": "Think."}, "turns": steps},
        {"name": "main", "turns": [
            {"tool_calls": [{"name": "task", "arguments": {"description": "Think", "prompt": "Think."}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"message": "done"}}]},
        ]},
    ]})


def seconds(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def quantiles(values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return f"{statistics.median(ms):.2f} / {p99:.2f}"


async def answer_timed(
    client: httpx.AsyncClient, path: str, frame: dict[str, Any], body: dict[str, Any],
    figures: dict[str, list[float]], posted: dict[str, float],
) -> None:
    """Time a POST to an unknown request (the ceiling, in ``figures["noop"]``), then answer the
    request ``frame`` with ``body``, noting when in ``posted`` (by ``tool_call_id``)."""
    began = time.perf_counter()
    missing = await client.post(f"{path}/no-such-request", json=body)
    assert missing.status_code == 404, missing.text
    figures["noop"].append(time.perf_counter() - began)
    posted[frame["tool_call_id"]] = time.time()
    answered = await client.post(f"{path}/{frame['request_id']}", json=body)
    assert answered.status_code == 200, answered.text


async def answer_every_request(start: Any, socket_url: str, http_url: str, headers: dict[str, str], calls: int) -> dict[str, list[float]]:
    """Start the run (``start()`` returns its conversation id, after the socket is open),
    answer each request from the socket with a POST, and time both paths."""
    figures: dict[str, list[float]] = {"request": [], "action": [], "answer": [], "noop": []}
    posted: dict[str, float] = {}
    async with httpx.AsyncClient(base_url=http_url, headers=headers, timeout=30) as client:
        cid = await start()
        async with websockets.connect(f"{socket_url}/sockets/events/{cid}", additional_headers=headers,
                                      max_size=None) as socket:
            path = f"/api/conversations/{cid}/permissions"
            async for message in socket:
                now = time.time()
                frame = json.loads(message)
                kind = frame.get("kind")
                if kind == "ActionEvent" and frame.get("tool_name") == "think":
                    figures["action"].append(now - seconds(frame["timestamp"]))
                elif kind == "PermissionRequestEvent":
                    figures["request"].append(now - seconds(frame["timestamp"]))
                    await answer_timed(client, path, frame, {"decision": "allow"}, figures, posted)
                elif kind == "ObservationEvent" and frame.get("tool_call_id") in posted:
                    figures["answer"].append(seconds(frame["timestamp"]) - posted.pop(frame["tool_call_id"]))
                elif kind == "ConversationStateUpdateEvent" and frame.get("key") == "status" \
                        and "subagent_id" not in frame and frame.get("value") in ("finished", "error"):
                    break
    assert len(figures["answer"]) == calls, f"{len(figures['answer'])} of {calls} calls ran"
    return figures


async def one_server(folder: Path, calls: int) -> dict[str, list[float]]:
    settings = isolated_settings(folder, forward_subagent_events=True)
    async with taskwire_server(settings) as server:
        async def start() -> str:
            agent = {"kind": "native", "approval": ["think"], "max_iterations": calls + 10,
                     "llm": {"api": "scripted", "script": script(calls)}}
            return (await server.runtime.create(agent, initial_message="Go.")).id

        return await answer_every_request(start, server.ws_url, server.url, {}, calls)


async def two_replicas(folder: Path, calls: int) -> dict[str, list[float]]:
    sys.path.insert(0, str(ROOT / "bench"))
    from scaleout import postgres_schema

    async with postgres_schema() as database_url:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
        env.update(OH_DATABASE_URL=database_url, OH_REDIS_URL=REDIS, OH_FORWARD_SUBAGENT_EVENTS="true",
                   OH_CONFIG_FILE=str(folder / "none.toml"))
        replica_b = ServerProcess("bench-b", folder, env)
        settings = isolated_settings(folder / "a", database_url=database_url, redis_url=REDIS,
                                     replica_id="bench-a", forward_subagent_events=True)
        async with taskwire_server(settings) as replica_a:
            await replica_b.start()
            try:
                async def start() -> str:
                    agent = {"kind": "native", "approval": ["think"], "max_iterations": calls + 10,
                             "llm": {"api": "scripted", "script": script(calls)}}
                    return (await replica_a.runtime.create(agent, initial_message="Go.")).id

                return await answer_every_request(start, replica_b.ws_url, replica_b.url, {}, calls)
            finally:
                await replica_b.stop()
                await replica_b.client.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="permission requests per run")
    parser.add_argument("--skip-replicas", action="store_true", help="only the one-server run")
    args = parser.parse_args()
    console = Console(width=max(120, Console().width))
    console.log(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {args.calls} requests a run")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        console.log("one server: SQLite + in-process bus")
        (folder / "one").mkdir()
        rows.append(("one server (SQLite, in-process bus)", await one_server(folder / "one", args.calls)))
        if not args.skip_replicas:
            console.log("two replicas: run on A, socket and answers on B (PostgreSQL + Redis)")
            (folder / "two").mkdir()
            rows.append(("two replicas (PostgreSQL + Redis), client on the other", await two_replicas(folder / "two", args.calls)))
    table = Table(title=f"permissions: {args.calls} requests from a sub-agent, each answered over REST (ms p50 / p99)")
    table.add_column("path")
    table.add_column("request → root socket", justify="right")
    table.add_column("ceiling: ActionEvent → socket", justify="right")
    table.add_column("answer POST → tool running", justify="right")
    table.add_column("ceiling: POST to an unknown request", justify="right")
    for name, figures in rows:
        table.add_row(name, quantiles(figures["request"]), quantiles(figures["action"]),
                      quantiles(figures["answer"]), quantiles(figures["noop"]))
    console.print(table)


if __name__ == "__main__":
    asyncio.run(main())
