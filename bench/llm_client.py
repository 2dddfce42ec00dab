"""What one model call costs the client's CPU, by HTTP library, at N callers at once.

    .venv/bin/python bench/llm_client.py                      # 50 callers x 20 calls, 3 rounds
    .venv/bin/python bench/llm_client.py --callers 1 --calls 200

``taskwire mock-llm`` (its own process) answers every call at once with the same streamed
chat completion (a sentence and a ``think`` call, as ``bench/live.py``'s trees make); the
callers share one event loop. Each library streams the same request body and feeds the same
SSE parser and answer assembler (``server/llm``), so the rows differ by the HTTP layer alone:

- ``httpx``: ``AsyncClient.stream`` (what taskwire used before: its request building and cookie
  handling are a fixed cost per call);
- ``httpcore``: httpcore's pool directly, beneath httpx;
- ``aiohttp``: ``ModelHTTP`` (``server/llm/transport.py``, what taskwire uses);
- ``OpenAILLM``: the whole client taskwire's agents call (aiohttp, retries and gates included).

Printed: CPU ms per call (this process, all threads) and wall seconds per round. It asserts
nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpcore
import httpx
from common import ROOT
from rich.console import Console
from rich.table import Table

from taskwire.llm.base import ChatMessage, LLMRequest
from taskwire.llm.openai import OpenAILLM
from taskwire.llm.sse import _parse, encode_body
from taskwire.llm.transport import ModelHTTP, Timeouts
from tests.services import free_port

SCRIPT = {"lanes": [{"name": "main", "repeat": True, "turns": [{
    "text": "Thinking about it now, step by step.",
    "tool_calls": [{"name": "think", "arguments": {"thought": "a fairly long thought " * 5}}],
}]}]}
REQUEST = LLMRequest(model="mock", system="You are a test agent. " * 20, messages=[ChatMessage(role="user", content="Go " * 200)])


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def split_lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    rest = b""
    async for chunk in chunks:
        *whole, rest = (rest + chunk).split(b"\n")
        for line in whole:
            yield line.decode().removesuffix("\r")
    if rest:
        yield rest.decode()


async def assemble(llm: OpenAILLM, lines: AsyncIterator[str]) -> None:
    stream = llm.new_stream()
    async for event in _parse(lines):
        if not stream.done:
            stream.feed(event)
    stream.response()


async def measure(call: Callable[[], Awaitable[None]], callers: int, calls: int) -> tuple[float, float]:
    await asyncio.gather(*(call() for _ in range(callers)))  # connections made, caches warm

    async def caller() -> None:
        for _ in range(calls):
            await call()

    cpu, wall = cpu_seconds(), time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(callers)))
    return (cpu_seconds() - cpu) * 1000 / (callers * calls), time.perf_counter() - wall


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--callers", type=int, default=50)
    parser.add_argument("--calls", type=int, default=20, help="calls per caller, one after another")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    console = Console(width=max(120, Console().width))
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps(SCRIPT))
        model = subprocess.Popen([sys.executable, "-m", "taskwire.cli", "mock-llm", "--script", str(script), "--port", str(port)],
                                 cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            base = f"http://127.0.0.1:{port}/v1"
            async with httpx.AsyncClient() as probe:
                for _ in range(200):
                    try:
                        await probe.get(f"http://127.0.0.1:{port}/script/status")
                        break
                    except httpx.TransportError:
                        await asyncio.sleep(0.05)
            rows = await compare(base, args)
        finally:
            model.terminate()
            model.wait()
    table = Table(title=f"client CPU per model call, {args.callers} callers x {args.calls} calls (load {os.getloadavg()[0]:.1f})")
    for column in ("library", *(f"round {n + 1} ms (wall s)" for n in range(args.rounds))):
        table.add_column(column, justify="right")
    for name, figures in rows.items():
        table.add_row(name, *(f"{cpu:.3f} ({wall:.2f})" for cpu, wall in figures))
    console.print(table)


async def compare(base: str, args: argparse.Namespace) -> dict[str, list[tuple[float, float]]]:
    http = ModelHTTP()
    llm = OpenAILLM("mock", base_url=base, api_key="bench", http=http)
    body = encode_body(llm.request_body(REQUEST))
    headers = {"content-type": "application/json", "accept": "text/event-stream", "authorization": "Bearer bench"}
    url = f"{base}/chat/completions"
    client = httpx.AsyncClient(limits=httpx.Limits(max_connections=None, max_keepalive_connections=16))
    pool = httpcore.AsyncConnectionPool(max_keepalive_connections=16)
    timeouts = {"connect": 120.0, "read": 90.0, "write": 120.0, "pool": 120.0}

    async def via_httpx() -> None:
        async with client.stream("POST", url, content=body, headers=headers) as response:
            await assemble(llm, response.aiter_lines())

    async def via_httpcore() -> None:
        async with pool.stream("POST", url, headers=list(headers.items()), content=body, extensions={"timeout": timeouts}) as response:
            await assemble(llm, split_lines(response.aiter_stream()))

    async def via_aiohttp() -> None:
        async with http.post(url, body, headers, Timeouts()) as answer:
            await assemble(llm, answer.lines())

    async def via_llm() -> None:
        await llm.complete(REQUEST)

    calls = {"httpx": via_httpx, "httpcore": via_httpcore, "aiohttp": via_aiohttp, "OpenAILLM": via_llm}
    rows: dict[str, list[tuple[float, float]]] = {name: [] for name in calls}
    try:
        for _ in range(args.rounds):  # interleaved, so the machine's drift falls on every row
            for name, call in calls.items():
                rows[name].append(await measure(call, args.callers, args.calls))
    finally:
        await client.aclose()
        await pool.aclose()
        await http.aclose()
    return rows


if __name__ == "__main__":
    asyncio.run(main())
