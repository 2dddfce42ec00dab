"""What pricing adds to a model call's CPU, and how long steering takes to reach a sub-agent.

    .venv/bin/python bench/steer_price.py [--calls 200] [--rounds 3] [--steers 40] [--delay 0.1]

1. **Pricing, alone**: ``pricing.priced_call`` on calls whose token counts all differ (no
   cached answer), beside the same call for a model the table does not know (a lookup only).
2. **Pricing, in a run**: a native agent makes ``--calls`` model calls (``think``, then
   ``finish``) against ``taskwire mock-llm`` in a process of its own, over HTTP; this process's
   CPU per model call is measured with a model the table prices (``gpt-4o-mini``) and with one
   it does not (nothing is computed), in interleaved rounds. The difference is what pricing
   adds; the ceiling is DESIGN.md's 2 ms of server CPU per model call.
3. **Steering**: a sub-agent thinks in a loop, each answer ``--delay`` late; a message is
   posted at a random moment, ``--steers`` times. Printed: POST -> 202, POST -> the request that
   carries it reaching the model server (mostly the model call in flight, which it waits for),
   and the part that is taskwire's: from the later of the POST's answer and the end of the
   answer in flight to that request, beside the same step of every request (the baseline: an
   answer's end to the next request, with or without a message).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, isolated_settings, taskwire_server  # noqa: E402
from taskwire.events import LLMCall, Usage  # noqa: E402
from taskwire.pricing import priced_call  # noqa: E402
from taskwire.llm.mock_server import create_mock_app  # noqa: E402
from tests.servers import serve_app, wait_for_status  # noqa: E402

PRICED, UNPRICED = "gpt-4o-mini", "bench-unpriced-model"
USAGE = {"input_tokens": 1000, "output_tokens": 100, "cache_read_tokens": 200}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def pricing_alone(count: int) -> tuple[float, float]:
    """Microseconds per ``priced_call``: a priced model (distinct tokens every call), an unpriced one."""
    results = []
    for model in (PRICED, UNPRICED):
        call = LLMCall(model=model, provider="openai")
        usages = [Usage(input_tokens=1000 + i, output_tokens=100 + i % 7, cache_read_tokens=i % 50, llm_calls=1)
                  for i in range(count)]
        start = time.perf_counter()
        for usage in usages:
            priced_call(usage, call)
        results.append((time.perf_counter() - start) / count * 1e6)
    return results[0], results[1]


def think_script(calls: int) -> dict[str, Any]:
    think = {"tool_calls": [{"name": "think", "arguments": {"thought": "step"}}], "usage": USAGE}
    done = {"tool_calls": [{"name": "finish", "arguments": {"message": "done"}}], "usage": USAGE}
    return {"lanes": [{"name": "main", "repeat": False, "turns": [think] * (calls - 1) + [done]}]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def mock_process(script: dict[str, Any], folder: Path) -> tuple[asyncio.subprocess.Process, str]:
    path = folder / "script.json"
    path.write_text(json.dumps(script))
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        str(ROOT / ".venv/bin/taskwire"), "mock-llm", "--script", str(path), "--port", str(port),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, cwd=str(folder))
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return proc, url
        except OSError:
            await asyncio.sleep(0.05)
    raise RuntimeError("mock-llm did not start")


async def cpu_per_call(folder: Path, model: str, calls: int) -> float:
    """Server CPU (this process) per model call of one run of ``calls`` calls, ms."""
    folder.mkdir(parents=True, exist_ok=True)
    proc, url = await mock_process(think_script(calls), folder)
    try:
        async with taskwire_server(isolated_settings(folder)) as server:
            agent = {"kind": "native", "llm": {"api": "openai", "model": model, "base_url": f"{url}/v1", "api_key": "k"},
                     "max_iterations": calls + 1}
            start = time.process_time()
            created = await server.client.post("/api/conversations", json={"agent": agent, "initial_message": "Go."})
            info = await wait_for_status(server.client, created.json()["id"], {"finished", "error"}, timeout=600)
            spent = time.process_time() - start
            assert info["status"] == "finished", info
            assert info["usage"]["llm_calls"] == calls
            assert (info["usage"]["cost_usd"] is not None) == (model == PRICED)
    finally:
        proc.kill()
        await proc.wait()
    return spent / calls * 1000


class Stamped:
    """``mock-llm`` in this process, noting when each request arrives and each answer ends."""

    def __init__(self, script: dict[str, Any]) -> None:
        self.app = create_mock_app(script)
        self.arrivals: list[tuple[float, bytes]] = []
        self.answered: list[float] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = b""

        async def take() -> Any:
            nonlocal body
            message = await receive()
            if message["type"] == "http.request":
                body += message.get("body", b"")
                if not message.get("more_body"):
                    self.arrivals.append((time.perf_counter(), body))
            return message

        async def give(message: Any) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                self.answered.append(time.perf_counter())

        await self.app(scope, take, give)


async def steering(folder: Path, steers: int, delay: float) -> dict[str, list[float]]:
    think = {"tool_calls": [{"name": "think", "arguments": {"thought": "step"}}], "delay": delay, "usage": USAGE}
    script = {"lanes": [
        {"name": "sub", "match": {"first_user_ends_with": "Think a lot."}, "turns": [think] * (steers * 4 + 20)},
        {"name": "main", "turns": [{"tool_calls": [{"name": "task", "arguments": {"description": "Thinker", "prompt": "Think a lot."}}]}]},
    ]}
    mock = Stamped(script)
    figures: dict[str, list[float]] = {"answer": [], "reached": [], "ours": []}
    async with serve_app(mock) as url:
        async with taskwire_server(isolated_settings(folder, forward_subagent_events=True)) as server:
            agent = {"kind": "native", "llm": {"api": "openai", "model": PRICED, "base_url": f"{url}/v1", "api_key": "k"},
                     "max_iterations": steers * 4 + 30}
            created = await server.client.post("/api/conversations", json={"agent": agent, "initial_message": "Go."})
            cid = created.json()["id"]
            sid = None
            while sid is None:
                tree = (await server.client.get(f"/api/conversations/{cid}/subagents")).json()
                sid = tree[0]["subagent_id"] if tree else None
                await asyncio.sleep(0.02)
            for n in range(steers):
                await asyncio.sleep(random.uniform(0, delay * 1.5))
                marker = f"steer-{n}-{random.random()}".encode()
                sent = time.perf_counter()
                response = await server.client.post(f"/api/conversations/{cid}/subagents/{sid}/messages",
                                                    json={"content": marker.decode()})
                answered = time.perf_counter()
                assert response.status_code == 202, response.text
                while not any(marker in body for _, body in mock.arrivals):
                    await asyncio.sleep(0.001)
                arrived, _ = next((t, b) for t, b in mock.arrivals if marker in b)
                ready = max([answered] + [t for t in mock.answered if t < arrived])
                figures["answer"].append((answered - sent) * 1000)
                figures["reached"].append((arrived - sent) * 1000)
                figures["ours"].append((arrived - ready) * 1000)
            await server.client.post(f"/api/conversations/{cid}/interrupt")
    # The same step without a message: each request's arrival after the answer before it.
    for arrived, _ in mock.arrivals[2:]:
        before = [t for t in mock.answered if t < arrived]
        if before:
            figures.setdefault("step", []).append((arrived - before[-1]) * 1000)
    return figures


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steers", type=int, default=40)
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--folder", type=Path, default=Path("/tmp/taskwire-bench-steer-price"))
    args = parser.parse_args()
    import shutil

    shutil.rmtree(args.folder, ignore_errors=True)

    priced, unpriced = pricing_alone(5000)
    print(f"pricing alone: {priced:.1f} us a call priced (distinct tokens), {unpriced:.1f} us unpriced (lookup)"
          f"  [load {load()}]")

    rounds: dict[str, list[float]] = {PRICED: [], UNPRICED: []}
    for n in range(args.rounds):
        # Interleaved, and in turn first: a run's process has what the ones before it left.
        for model in ((UNPRICED, PRICED) if n % 2 == 0 else (PRICED, UNPRICED)):
            ms = await cpu_per_call(args.folder / f"run-{n}-{model}", model, args.calls)
            rounds[model].append(ms)
            print(f"round {n + 1}: {model:22s} {ms:.3f} ms of server CPU a model call  [load {load()}]")
    p, u = statistics.median(rounds[PRICED]), statistics.median(rounds[UNPRICED])
    print(f"in a run ({args.calls} calls over HTTP, median of {args.rounds}): priced {p:.3f} ms, unpriced {u:.3f} ms, "
          f"pricing adds {(p - u) * 1000:.0f} us a call ({(p - u) / u * 100:.1f} %); ceiling 2 ms a call  [load {load()}]")

    figures = await steering(args.folder / "steer", args.steers, args.delay)
    for name, label in (("answer", "POST -> 202"), ("reached", "POST -> the request carrying it"),
                        ("ours", "ready -> the request carrying it (taskwire's part)"),
                        ("step", "any step: an answer's end -> the next request (the baseline)")):
        values = figures[name]
        print(f"steering, {label}: p50 {pct(values, 0.5):.1f} ms, p99 {pct(values, 0.99):.1f} ms, max {max(values):.1f} ms "
              f"({len(values)} samples, model answers {args.delay * 1000:.0f} ms late)  [load {load()}]")


if __name__ == "__main__":
    asyncio.run(main())
