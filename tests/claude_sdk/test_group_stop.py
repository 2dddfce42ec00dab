"""Claude Code mid-turn under ``taskwire serve``, and the server's whole process group
signalled (a terminal's Ctrl-C, a group SIGTERM): the server stops cleanly, without a
traceback, and no Claude Code process outlives it."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.claude_sdk.real_claude import claude_agent, mock_llm, need_claude_code
from tests.group_stop import GroupServer, alive, assert_quiet, stopped_cleanly
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
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OH_", "OTEL_"))}
        env.update({"OH_TRACING": "false", "OH_CONFIG_FILE": str(tmp_path / "none.toml")})
        server = GroupServer(tmp_path, env)
        await server.start()
        try:
            agent = claude_agent(mock, tmp_path / "home")
            response = await server.client.post("/api/conversations", json={"agent": agent, "initial_message": "go"})
            assert response.status_code == 201, response.text

            async def asked_the_model() -> bool:
                lines = requests.read_text().splitlines() if requests.exists() else []
                return any(json.loads(line)["lane"] == "main" for line in lines)

            await wait_until(asked_the_model, timeout=120, what=f"Claude Code's request to the model ({server.log()[-2000:]})")
            children = server.descendants()
            assert children, "Claude Code is a child of the server"
            status = await server.signal_group(sig)
        finally:
            await server.end()
    log = server.log()
    assert stopped_cleanly(status, sig), (status, log)
    assert_quiet(log)
    assert not alive(children), f"left behind: {alive(children)}"
