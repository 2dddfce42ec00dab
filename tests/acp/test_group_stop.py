"""A conversation whose ACP peer is mid-turn, and ``taskwire serve``'s whole process group
signalled (a terminal's Ctrl-C, a group SIGTERM): the server stops cleanly and its peer, in a
process group of its own, is ended by the server's shutdown, not left behind."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from tests.group_stop import GroupServer, assert_stopped_cleanly, serve_env
from tests.services import wait_until

FAKE_AGENT = Path(__file__).resolve().parent / "fake_agent.py"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_group_signal_stops_the_server_and_ends_its_acp_peer(tmp_path: Path, sig: signal.Signals) -> None:
    pid_file = tmp_path / "agent.pid"
    server = GroupServer(tmp_path, serve_env(tmp_path, OH_TRACING="false", FAKE_AGENT_PID_FILE=str(pid_file)))
    await server.start()
    try:
        agent = {"kind": "acp", "command": sys.executable, "args": [str(FAKE_AGENT)], "startup_timeout": 60}
        conversation_id = await server.start_conversation(agent, "hang")

        async def peer_mid_turn() -> bool:
            return await server.has_events(conversation_id, "ACPToolCallEvent") and pid_file.exists()

        await wait_until(peer_mid_turn, timeout=60, what="the ACP peer's running calls")
        peer = int(pid_file.read_text())
        children = server.descendants()
        assert peer in children
        status = await server.signal_group(sig)
    finally:
        await server.end()
    assert_stopped_cleanly(server, status, sig, children)
