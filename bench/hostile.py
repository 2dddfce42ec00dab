"""Hostile clients against one ``taskwire serve`` process: what each attack costs the server.

    .venv/bin/python bench/hostile.py [--sockets 100]

Memory is the process's own (``/proc``), its peak (``VmHWM``) measured from an idle server in
the same run: the idle figure is the ceiling's base, and the issue's bound is idle + 50 MB.
Nothing is asserted (tests/reliability/ asserts the bounds).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.reliability.conftest import KEY, log_problems, reset_peak, rss_mb, server_env  # noqa: E402
from tests.reliability.raw_socket import RawSocket  # noqa: E402
from tests.reliability.test_preauth_memory import attack  # noqa: E402
from tests.servers import ServerProcess, wait_for_status  # noqa: E402


async def measure(server: ServerProcess, what: str, run: object) -> None:
    assert server.process is not None
    pid = server.process.pid
    idle = rss_mb(pid)
    reset_peak(pid)
    started = time.perf_counter()
    detail = await run  # type: ignore[misc]
    took = time.perf_counter() - started
    peak = rss_mb(pid, "VmHWM")
    print(f"| {what} | {idle:.0f} | {peak:.0f} | {peak - idle:+.1f} | {took:.1f} | {detail} |", flush=True)


async def preauth(server: ServerProcess, path: str, sockets: int) -> str:
    results = await asyncio.gather(*(attack(server, path, fragments=n % 2 == 1) for n in range(sockets)))
    codes = sorted({str(code) for code, _ in results})
    return f"{sockets} sockets × 15 MB; closes {', '.join(codes)}; most taken {max(s for _, s in results) / 1e6:.1f} MB"


async def silent(server: ServerProcess, path: str, sockets: int) -> str:
    opened = [await RawSocket.open(server.port, path) for _ in range(sockets)]
    await asyncio.sleep(1)  # all of them waiting for their auth frame
    for ws in opened:
        ws.reset()
    return f"{sockets} sockets waiting to authenticate"


async def resets(server: ServerProcess, path: str, sockets: int) -> str:
    for start in range(0, sockets, 100):
        async def one() -> None:
            ws = await RawSocket.open(server.port, path, {"X-Session-API-Key": KEY})
            ws.reset()
        await asyncio.gather(*(one() for _ in range(min(100, sockets - start))))
    return f"{sockets} sockets reset after auth"


async def big_output(server: ServerProcess, printed: int) -> str:
    script = ("lanes:\n  - name: main\n    turns:\n"
              f"      - tool_calls: [{{name: terminal, arguments: {{command: 'head -c {printed} /dev/zero | tr \"\\\\0\" x'}}}}]\n"
              "      - text: done\n")
    body = {"agent": {"kind": "native", "llm": {"api": "scripted", "script": script}}, "initial_message": "go"}
    conversation = (await server.client.post("/api/conversations", json=body)).json()["id"]
    await wait_for_status(server.client, conversation, {"finished", "error"}, timeout=300)
    return f"terminal printing {printed / 1e6:.0f} MB"


async def fresh_server(folder: Path, what: str, run: object) -> None:
    """Each attack on its own server, so what one leaves behind does not hide the next."""
    server = ServerProcess(what.replace(" ", "-"), folder, server_env())
    server.client.headers["X-Session-API-Key"] = KEY
    await server.start()
    try:
        conversation = (await server.client.post("/api/conversations", json={"run": False})).json()["id"]
        path = f"/sockets/events/{conversation}"
        await attack(server, path, fragments=False)  # warm up the socket paths
        await measure(server, what, run(server, path))  # type: ignore[operator]
        await server.stop()
        LOGS.append(f"{what}: {server.log_path.stat().st_size} bytes of log, {len(log_problems(server))} lines with a traceback or error")
    finally:
        await server.stop()
        await server.client.aclose()


LOGS: list[str] = []


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sockets", type=int, default=100)
    args = parser.parse_args()
    print("| attack | idle MB | peak MB | peak − idle | s | what |")
    print("|---|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        await fresh_server(folder, "pre-auth frames", lambda s, p: preauth(s, p, args.sockets))
        await fresh_server(folder, "silent sockets", lambda s, p: silent(s, p, 256))
        await fresh_server(folder, "resets", lambda s, p: resets(s, p, 1_000))
        await fresh_server(folder, "big output", lambda s, p: big_output(s, 200_000_000))
    print()
    for line in LOGS:
        print(line)


if __name__ == "__main__":
    asyncio.run(main())
