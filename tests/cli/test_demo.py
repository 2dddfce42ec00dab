"""``taskwire demo`` against a running server, as a new user runs it."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from tests.servers import isolated_settings, taskwire_server

REPO = Path(__file__).resolve().parents[2]


async def run_cli(*args: str, columns: str | None = "200") -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "taskwire.cli", *args,
        cwd=REPO, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        env={**env, "NO_COLOR": "1", **({"COLUMNS": columns} if columns else {})},
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode()


def rows(output: str) -> list[list[str]]:
    """The tool rows: seq, tool_call_id, status, parent_tool_use_id, then the title's words."""
    return [line.split() for line in output.splitlines() if line.strip()[:1].isdigit()]


async def test_demo_prints_one_row_per_tool_event_with_subagent_rows_pointing_at_their_task_call(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        code, output = await run_cli("demo", "--url", server.url)
    assert code == 0, output
    assert "run ended: finished" in output
    table = rows(output)
    task_calls = {r[1] for r in table if r[4:5] == ["task:"]}
    assert len(task_calls) == 2
    main = [r for r in table if r[3] == "-"]
    sub = [r for r in table if r[3] != "-"]
    assert any("echo main-agent" in " ".join(r) for r in main)
    assert {r[3] for r in sub} == task_calls
    echoed = {" ".join(r) for r in sub if "terminal:" in r}
    assert any("echo subagent-a" in line for line in echoed) and any("echo subagent-b" in line for line in echoed)
    assert {r[2] for r in table} <= {"in_progress", "completed", "failed", "cancelled", "pending"}


async def test_piped_demo_rows_are_whole_not_cut_at_eighty_columns(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        code, output = await run_cli("demo", "--url", server.url, columns=None)
    assert code == 0, output
    final = next(line for line in output.splitlines() if "finish -> Done" in line)
    assert len(final) > 80 and final.endswith("finish -> Done: main-agent, subagent-a and subagent-b were all echoed.")


async def test_demo_says_so_when_the_server_is_not_there() -> None:
    code, output = await run_cli("demo", "--url", "http://127.0.0.1:9")
    assert code == 1 and "cannot reach" in output and "make run" in output
