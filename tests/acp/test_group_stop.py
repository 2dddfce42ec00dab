"""A conversation whose ACP peer is mid-turn, and ``taskwire serve``'s whole process group
signalled (a terminal's Ctrl-C, a group SIGTERM): the server stops cleanly and its peer, in a
process group of its own, is ended by the server's shutdown, not left behind."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from tests.group_stop import GroupServer, alive, assert_quiet, stopped_cleanly
from tests.services import wait_until

FAKE_AGENT = Path(__file__).resolve().parent / "fake_agent.py"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_group_signal_stops_the_server_and_ends_its_acp_peer(tmp_path: Path, sig: signal.Signals) -> None:
    pid_file = tmp_path / "agent.pid"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OH_", "OTEL_"))}
    env.update({"OH_TRACING": "false", "OH_CONFIG_FILE": str(tmp_path / "none.toml"), "FAKE_AGENT_PID_FILE": str(pid_file)})
    server = GroupServer(tmp_path, env)
    await server.start()
    try:
        agent = {"kind": "acp", "command": sys.executable, "args": [str(FAKE_AGENT)], "startup_timeout": 60}
        response = await server.client.post("/api/conversations", json={"agent": agent, "initial_message": "hang"})
        assert response.status_code == 201, response.text
        conversation_id = response.json()["id"]

        async def peer_mid_turn() -> bool:
            params = {"kind": "ACPToolCallEvent"}
            page = (await server.client.get(f"/api/conversations/{conversation_id}/events/search", params=params)).json()
            return bool(page["items"]) and pid_file.exists()

        await wait_until(peer_mid_turn, timeout=60, what="the ACP peer's running calls")
        peer = int(pid_file.read_text())
        children = server.descendants()
        assert peer in children
        status = await server.signal_group(sig)
    finally:
        await server.end()
    log = server.log()
    assert stopped_cleanly(status, sig), (status, log)
    assert_quiet(log)
    assert not alive(children), f"left behind: {alive(children)}"
