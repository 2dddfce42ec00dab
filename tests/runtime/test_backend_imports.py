"""Peer backends are imported off the event loop, once: conversations of that kind starting
together, in a process that has not imported it yet, all get the whole module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROGRAM = """
import asyncio
from taskwire.runtime.backends import _imported

async def main():
    ticks = 0
    async def tick():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1
    ticking = asyncio.create_task(tick())
    names = ["taskwire.runtime.backends.claude_sdk", "taskwire.runtime.backends.acp"] * 4
    modules = await asyncio.gather(*(_imported(name) for name in names))
    ticking.cancel()
    assert all(hasattr(m, "ClaudeSDKBackend") or hasattr(m, "ACPBackend") for m in modules), modules
    assert len({id(m) for m in modules}) == 2
    print("loop ran", ticks > 0)

asyncio.run(main())
"""


def test_concurrent_first_imports_get_the_whole_module_and_the_loop_runs_meanwhile() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "loop ran True"
