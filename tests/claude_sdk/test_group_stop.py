"""Claude Code mid-turn under ``taskwire serve``, and the server's whole process group
signalled (a terminal's Ctrl-C, a group SIGTERM): the server stops cleanly, without a
traceback, and no Claude Code process outlives it."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.claude_sdk.real_claude import claude_agent, mock_llm, need_claude_code
from tests.group_stop import GroupServer, assert_stopped_cleanly, serve_env
from tests.services import wait_until

SCRIPT = """\
presets: [claude_code]
lanes:
  - name: main
    turns:
      - text: never sent, the server stops first
        delay: 600
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_group_signal_stops_the_server_and_ends_claude_code(tmp_path: Path, sig: signal.Signals) -> None:
    need_claude_code()
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    requests = tmp_path / "requests.jsonl"
    async with mock_llm(script, requests) as mock:
        server = GroupServer(tmp_path, serve_env(tmp_path, OH_TRACING="false"))
        await server.start()
        try:
            await server.start_conversation(claude_agent(mock, tmp_path / "home"), "go")

            async def asked_the_model() -> bool:
                lines = requests.read_text().splitlines() if requests.exists() else []
                return any(json.loads(line)["lane"] == "main" for line in lines)

            await wait_until(asked_the_model, timeout=120, what=f"Claude Code's request to the model ({server.log()[-2000:]})")
            children = server.descendants()
            assert children, "Claude Code is a child of the server"
            status = await server.signal_group(sig)
        finally:
            await server.end()
    assert_stopped_cleanly(server, status, sig, children)
