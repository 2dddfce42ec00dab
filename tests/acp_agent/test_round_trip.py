"""taskwire's ACP client drives taskwire's ACP agent: a native agent's ``task`` goes to a
sub-agent type whose backend is ``taskwire acp`` (embedded), and the outer server's socket shows
the inner agent's sub-agents nested under it, with the right stamps at every level."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.acp_agent.helpers import SCRIPTS, embedded_env
from tests.api.helpers import create, scripted_agent
from tests.api.socket_client import next_frame, open_socket
from tests.servers import RunningServer, wait_for_status

OUTER = json.dumps({"lanes": [{"name": "outer", "turns": [
    {"tool_calls": [{"name": "task", "id": "call_delegate", "arguments": {
        "description": "Ask taskwire over ACP", "prompt": "Run the demo.", "subagent_type": "taskwire-acp"}}]},
    {"tool_calls": [{"name": "finish", "arguments": {"message": "delegated"}}]},
]}]})


def write_taskwire_acp_type(workspace: Path, inner: Path) -> None:
    """A project sub-agent type whose backend is ``taskwire acp`` on a store of its own."""
    env = embedded_env(inner, SCRIPTS / "two_and_nested.yaml")
    front = {
        "name": "taskwire-acp",
        "description": "taskwire itself, over ACP.",
        "agent": {"kind": "acp", "command": sys.executable, "args": ["-m", "taskwire.cli", "acp"],
                  "env": {k: v for k, v in env.items() if k.startswith("OH_")}, "session_mode": None},
    }
    folder = workspace / ".agents" / "agents"
    folder.mkdir(parents=True)
    (folder / "taskwire-acp.md").write_text(f"---\n{yaml.safe_dump(front)}---\nUnused: the ACP agent has its own prompt.\n")


async def socket_replay(server: RunningServer, conversation_id: str) -> list[dict[str, Any]]:
    """Every frame the socket sends a new subscriber of a finished conversation."""
    async with open_socket(server, conversation_id, resend_mode="all") as ws:
        first = await next_frame(ws)
        frames, last = [], first["value"]["last_seq"]
        while not frames or frames[-1].get("seq") != last:
            frames.append(await next_frame(ws))
    return frames


async def test_taskwire_over_acp_nests_its_subagents_under_the_task_that_reached_it(
    forwarding_server: RunningServer, tmp_path: Path
) -> None:
    server = forwarding_server
    workspace = tmp_path / "project"
    write_taskwire_acp_type(workspace, tmp_path / "inner")
    conversation = await create(server, agent=scripted_agent(OUTER), workspace=str(workspace), initial_message="Delegate.")
    info = await wait_for_status(server.client, conversation["id"], {"finished", "error"}, timeout=90)
    assert info["status"] == "finished"

    tree = (await server.client.get(f"/api/conversations/{conversation['id']}/subagents")).json()
    by_call = {entry["parent_tool_use_id"]: entry for entry in tree}
    assert set(by_call) == {"call_delegate", "call_main_1_0", "call_main_1_1", "call_suba_0_0"}
    bridge, a, b, leaf = (by_call[c] for c in ("call_delegate", "call_main_1_0", "call_main_1_1", "call_suba_0_0"))
    assert (bridge["subagent_type"], bridge["parent_subagent_id"]) == ("taskwire-acp", None)
    assert a["parent_subagent_id"] == b["parent_subagent_id"] == bridge["subagent_id"]
    assert leaf["parent_subagent_id"] == a["subagent_id"]
    assert {e["status"] for e in tree} == {"completed"}
    assert (a["description"], leaf["description"]) == ("Nest a sub-agent", "Echo leaf")

    frames = await socket_replay(server, conversation["id"])
    calls: dict[str, dict[str, Any]] = {}
    for frame in frames:
        if frame["kind"] == "ACPToolCallEvent":
            calls[frame["tool_call_id"]] = frame  # the last event of a call holds its whole state
    expected = {
        # the inner main agent's calls: under the outer task call, in the bridge sub-agent
        "call_main_0_0": ("call_delegate", bridge), "call_main_1_0": ("call_delegate", bridge),
        "call_main_1_1": ("call_delegate", bridge),
        # the inner sub-agents' calls: under the inner task calls, by the innermost stamp
        "call_suba_0_0": ("call_main_1_0", a), "call_subb_0_0": ("call_main_1_1", b),
        "call_leaf_0_0": ("call_suba_0_0", leaf),
    }
    assert set(calls) == set(expected)
    for call_id, (parent, subagent) in expected.items():
        assert (calls[call_id]["parent_tool_use_id"], calls[call_id]["subagent_id"]) == (parent, subagent["subagent_id"]), call_id
        assert calls[call_id]["status"] == "completed"
    # Sub-agent text came back attributed, never into a parent's message.
    messages = {(f.get("subagent_id"), f["content"]) for f in frames if f["kind"] == "MessageEvent" and f["role"] == "assistant"}
    assert (leaf["subagent_id"], "Running it.\n\nleaf printed: leaf") in messages
    root_text = [f for f in frames if f["kind"] == "MessageEvent" and not f.get("subagent_id")]
    assert all("leaf" not in f["content"] for f in root_text)
