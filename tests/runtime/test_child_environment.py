"""What the processes taskwire starts inherit: a tool only the variables the operator allows,
a peer agent the server's environment; neither ever an ``OH_*`` setting."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.acp.helpers import agent_pids, fake_agent
from tests.api.helpers import all_events, create, scripted_agent
from tests.servers import isolated_settings, taskwire_server, wait_for_status

SECRET = "leak-me-if-you-can"
RUN_ENV = "lanes:\n  - name: main\n    turns:\n      - tool_calls: [{name: terminal, arguments: {command: env}}]\n      - text: done\n"


@pytest.fixture
def secrets_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OH_PROBE_SECRET", SECRET)  # a setting this server does not know: still a setting
    monkeypatch.setenv("UNLISTED_SECRET", SECRET)
    monkeypatch.setenv("ALLOWED_VAR", "visible")


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(entry.split("=", 1) for entry in raw.decode(errors="replace").split("\0") if "=" in entry)


@pytest.mark.usefixtures("secrets_in_the_environment")
async def test_terminal_gets_only_the_allowed_variables_and_never_a_setting(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, tool_env_allow=["PATH", "ALLOWED_VAR", "OH_PROBE_SECRET"])
    async with taskwire_server(settings) as server:
        info = await create(server, agent=scripted_agent(RUN_ENV), initial_message="go")
        await wait_for_status(server.client, info["id"], {"finished"})
        (observation,) = await all_events(server, info["id"], kind="ObservationEvent")
    printed = dict(line.split("=", 1) for line in observation["content"].splitlines()[1:] if "=" in line)
    assert printed["ALLOWED_VAR"] == "visible" and "PATH" in printed
    assert SECRET not in observation["content"]
    assert not [name for name in printed if name.startswith("OH_")]


@pytest.mark.usefixtures("secrets_in_the_environment")
async def test_an_acp_peer_inherits_the_environment_but_no_setting(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        agent = fake_agent(tmp_path, env={"FAKE_AGENT_PID_FILE": str(tmp_path / "agent.pids"), "PEER_VAR": "given"})
        info = await create(server, agent=agent, initial_message="hello")
        await wait_for_status(server.client, info["id"], {"finished"}, timeout=90)
        (pid,) = agent_pids(tmp_path)
        inherited = environ_of(pid)
    assert inherited["PEER_VAR"] == "given" and inherited["UNLISTED_SECRET"] == SECRET  # a peer is configured by env
    assert not [name for name in inherited if name.startswith("OH_")]


@pytest.mark.usefixtures("secrets_in_the_environment")
async def test_claude_code_gets_no_setting_value(tmp_path: Path) -> None:
    dump = tmp_path / "claude.env"
    cli = tmp_path / "claude"  # stands in for Claude Code: writes what it was given, then exits
    cli.write_text(f"#!/bin/sh\nenv > {dump}\nexit 3\n")
    cli.chmod(0o755)
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        agent = {"kind": "claude_sdk", "cli_path": str(cli), "env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}}
        info = await create(server, agent=agent, initial_message="hello")
        await wait_for_status(server.client, info["id"], {"error"}, timeout=90)
    given = dict(line.split("=", 1) for line in dump.read_text().splitlines() if "=" in line)
    assert given["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert SECRET not in {given[name] for name in given if name.startswith("OH_")}
    assert all(given[name] == "" for name in given if name.startswith("OH_"))
