"""One OpenHands process serves every ``kind: openhands`` conversation of a server (as OpenHands'
own agent-server does), their events never cross, and nothing OpenHands starts for a
conversation (its terminal: a tmux server in a session of its own) outlives it."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from tests.api.helpers import all_events, create
from tests.openhands.helpers import drivers, openhands_server
from tests.servers import wait_for_status
from tests.services import wait_until

LONG = 180


def our_drivers() -> set[int]:
    """The OpenHands processes this test process started (its servers run in it)."""
    ours = set()
    for pid in drivers():
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        if f"\nPPid:\t{os.getpid()}\n" in status:
            ours.add(pid)
    return ours


async def test_two_conversations_at_once_run_in_one_process_and_never_cross(tmp_path: Path) -> None:
    assert not our_drivers()
    async with openhands_server(tmp_path, "two_trees") as oh:
        one, two = await asyncio.gather(
            create(oh.server, agent=oh.agent(), workspace=str(oh.workspace), initial_message="Work on tree one."),
            create(oh.server, agent=oh.agent(), workspace=str(tmp_path / "ws2"), initial_message="Work on tree two."))
        for info in (one, two):
            done = await wait_for_status(oh.server.client, info["id"], {"finished", "error"}, timeout=LONG)
            assert done["status"] == "finished", done
        assert our_drivers() == {oh.server.runtime.openhands.pid}  # one process for both
        for info, word in ((one, "one"), (two, "two")):
            subagents = (await oh.server.client.get(f"/api/conversations/{info['id']}/subagents")).json()
            assert [(s["description"], s["status"]) for s in subagents] == [(f"job {word}", "completed")]
            events = await all_events(oh.server, info["id"], include_subagents="true")
            thoughts = [e["arguments"]["thought"] for e in events if e["kind"] == "ActionEvent" and e["tool_name"] == "think"]
            assert thoughts == [f"working on {word}"]
            finish = [e["content"] for e in events if e["kind"] == "ObservationEvent" and e["tool_name"] == "finish"]
            assert finish == [f"{word} done", f"tree {word} answer"]
    # The process ended with the server.
    await wait_until(lambda: not our_drivers(), timeout=30, what="the OpenHands process to end")


async def test_with_no_tools_named_the_agent_has_openhands_defaults(tmp_path: Path) -> None:
    async with openhands_server(tmp_path, "terminal") as oh:
        agent = oh.agent()
        del agent["tools"]
        info = await create(oh.server, agent=agent, workspace=str(oh.workspace), initial_message="Please echo.")
        done = await wait_for_status(oh.server.client, info["id"], {"finished", "error"}, timeout=LONG)
        assert done["status"] == "finished", done
        observations = await all_events(oh.server, info["id"], kind="ObservationEvent")
        terminal = [e for e in observations if e["tool_name"] == "terminal"]
        # The tool is there and ran (its output may come after OpenHands hands back, under load).
        assert len(terminal) == 1 and not terminal[0]["is_error"] and "not found" not in terminal[0]["content"]


def sleeping_in(folder: Path) -> list[int]:
    """Pids of ``sleep 300`` processes working in ``folder``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == b"sleep\x00300\x00" \
                    and (entry / "cwd").resolve().is_relative_to(folder.resolve()):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def tmux_servers_of(marker: str) -> list[int]:
    """Pids of tmux processes started by the OpenHands process that carries ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"tmux" in (entry / "cmdline").read_bytes() \
                    and f"TASKWIRE_OPENHANDS_PROCESS={marker}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


async def test_an_interrupted_terminal_call_leaves_no_process_behind(tmp_path: Path) -> None:
    async with openhands_server(tmp_path, "terminal") as oh:
        info = await create(oh.server, agent=oh.agent(tools=["terminal", "task"]), workspace=str(oh.workspace),
                            initial_message="Please sleep.")
        await wait_until(lambda: bool(sleeping_in(oh.workspace)), timeout=LONG, what="the terminal's sleep 300")
        marker = oh.server.runtime.openhands._marker
        assert tmux_servers_of(marker)
        response = await oh.server.client.post(f"/api/conversations/{info['id']}/interrupt")
        assert response.status_code == 200 and response.json()["status"] == "paused"
        # The conversation's command ends with its interrupt, while the process serves on.
        await wait_until(lambda: not sleeping_in(oh.workspace), timeout=60, what="the sleep to end")
        process = oh.server.runtime.openhands.pid
        assert process is not None and os.path.exists(f"/proc/{process}")
    await wait_until(lambda: not tmux_servers_of(marker), timeout=30, what="OpenHands' tmux servers to end")
    assert not sleeping_in(oh.workspace)


async def test_a_deleted_conversation_ends_its_terminal_while_others_go_on(tmp_path: Path) -> None:
    async with openhands_server(tmp_path, "terminal") as oh:
        info = await create(oh.server, agent=oh.agent(tools=["terminal", "task"]), workspace=str(oh.workspace),
                            initial_message="Please sleep.")
        await wait_until(lambda: bool(sleeping_in(oh.workspace)), timeout=LONG, what="the terminal's sleep 300")
        deleted = await oh.server.client.delete(f"/api/conversations/{info['id']}")
        assert deleted.status_code in (200, 204), deleted.text
        await wait_until(lambda: not sleeping_in(oh.workspace), timeout=60, what="the deleted conversation's sleep to end")
        other = await create(oh.server, agent=oh.agent(tools=["terminal", "task"]), workspace=str(tmp_path / "ws2"),
                             initial_message="Please echo.")
        done = await wait_for_status(oh.server.client, other["id"], {"finished", "error"}, timeout=LONG)
        assert done["status"] == "finished", done
