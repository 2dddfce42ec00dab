"""The example of docs/client.md runs as written and prints the live tree it promises."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

from tests.conftest import REPO
from tests.servers import isolated_settings, taskwire_server

DOC = REPO / "docs" / "client.md"


def example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    return blocks[0]


async def test_the_documented_example_prints_the_tree_of_the_demo(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, forward_subagent_events=True, llm_script=str(REPO / "config/demo/two_subagents.yaml"))
    async with taskwire_server(settings) as server:
        code = example().replace("http://127.0.0.1:8000", server.url)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", code, cwd=REPO, env=os.environ.copy(),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 120)
    lines = out.decode().splitlines()
    assert proc.returncode == 0, out.decode()
    assert "run ended: finished" in lines
    live = lines[: lines.index("run ended: finished")]
    for line in ("task Echo subagent-a: in_progress", "  general-purpose task-1 Echo subagent-a: running",
                 "    terminal echo subagent-a: in_progress", "    terminal echo subagent-a: completed"):
        assert line in live, out.decode()
    assert "  general-purpose task-2 Echo subagent-b: completed" in lines[lines.index("run ended: finished"):]
