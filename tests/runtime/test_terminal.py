"""The ``terminal`` tool through a real run: bounded output, and a timeout that ends every
process the command started."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from tests.api.helpers import all_events, create, scripted_agent
from tests.servers import RunningServer, wait_for_status


def run_command(command: str, timeout: float | None = None) -> str:
    arguments = {"command": command, **({"timeout": timeout} if timeout else {})}
    return (
        "lanes:\n  - name: main\n    turns:\n"
        f"      - tool_calls: [{{name: terminal, arguments: {arguments!r}}}]\n"
        "      - text: done\n"
    )


async def observation(server: RunningServer, script: str) -> dict:
    info = await create(server, agent=scripted_agent(script), initial_message="go")
    await wait_for_status(server.client, info["id"], {"finished"})
    (found,) = await all_events(server, info["id"], kind="ObservationEvent")
    return found


async def test_a_timed_out_command_is_killed_with_everything_it_started(server: RunningServer) -> None:
    seen = await observation(server, run_command("sleep 300 & echo child=$!; wait", timeout=1))
    assert seen["is_error"] is True
    assert seen["content"].startswith("Command timed out after 1 s and was killed. Output so far:\nchild=")
    child = int(seen["content"].rsplit("child=", 1)[1].split()[0])
    for _ in range(100):  # killed with its group; reaped by init a moment later
        if not Path(f"/proc/{child}").exists() or Path(f"/proc/{child}/stat").read_text().split()[2] == "Z":
            break
        await asyncio.sleep(0.05)
    else:
        os.kill(child, 9)
        raise AssertionError("the command's child outlived the timeout")


async def test_long_output_keeps_its_head_and_tail_and_counts_the_rest(server: RunningServer) -> None:
    seen = await observation(server, run_command("seq 1 100000"))
    head, rest = seen["content"].split("\n[... ", 1)
    omitted, tail = rest.split(" bytes omitted ...]\n", 1)
    assert head.startswith("exit code: 0\n1\n2\n3\n") and tail.endswith("99999\n100000\n")
    total = sum(len(f"{n}\n") for n in range(1, 100_001))
    assert len(head) - len("exit code: 0\n") + int(omitted) + len(tail) == total
