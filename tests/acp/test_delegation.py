"""A native agent delegates with ``task`` to a sub-agent type that runs an ACP agent, whose own
sub-agents nest one level further: attribution runs through every level."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from tests.acp.helpers import FAKE_AGENT, agent_pids, alive, assert_stamped, assert_unstamped, last_per_call
from tests.api.helpers import all_events, create, scripted_agent
from tests.servers import RunningServer, wait_for_status

SCRIPT = Path(__file__).resolve().parent / "scripts" / "native_delegates_to_fake_acp.yaml"
TASK_CALL = "call_delegate_1"
"""The native agent's ``task`` call in that script."""


def write_fake_acp_type(workspace: Path, pid_file: Path) -> None:
    """A project sub-agent type whose backend is the fake ACP agent."""
    front = {
        "name": "fake-acp",
        "description": "The fake ACP agent.",
        "agent": {"kind": "acp", "command": sys.executable, "args": [str(FAKE_AGENT)],
                  "env": {"FAKE_AGENT_PID_FILE": str(pid_file)}},
    }
    folder = workspace / ".agents" / "agents"
    folder.mkdir(parents=True)
    (folder / "fake-acp.md").write_text(f"---\n{yaml.safe_dump(front)}---\nUnused: the ACP agent has its own prompt.\n")


async def test_task_to_an_acp_subagent_nests_its_subagents_three_levels(forwarding_server: RunningServer, tmp_path: Path) -> None:
    server = forwarding_server
    workspace = tmp_path / "project"
    write_fake_acp_type(workspace, tmp_path / "agent.pids")
    conversation = await create(server, agent=scripted_agent(str(SCRIPT)), workspace=str(workspace),
                                initial_message="Delegate the sub-agent demo.")
    info = await wait_for_status(server.client, conversation["id"], {"finished", "error"}, timeout=90)
    assert info["status"] == "finished"

    tree = (await server.client.get(f"/api/conversations/{conversation['id']}/subagents")).json()
    by_parent = {entry["parent_tool_use_id"]: entry for entry in tree}
    assert set(by_parent) == {TASK_CALL, "agent-a", "agent-b"}
    acp_agent = by_parent[TASK_CALL]
    assert (acp_agent["subagent_type"], acp_agent["status"], acp_agent["parent_subagent_id"]) == ("fake-acp", "completed", None)
    for call in ("agent-a", "agent-b"):
        assert by_parent[call]["parent_subagent_id"] == acp_agent["subagent_id"]
        assert by_parent[call]["status"] == "completed"

    # The root's own stream: its task call and the answer, nothing of the sub-agents.
    own = await all_events(server, conversation["id"])
    for event in own:
        assert_unstamped(event)
    observation = next(e for e in own if e["kind"] == "ObservationEvent" and e["tool_call_id"] == TASK_CALL)
    assert observation["content"].endswith("Working.\n\nDone.")

    every = await all_events(server, conversation["id"], include_subagents="true")
    calls = last_per_call(every)
    # Level 2: the ACP agent's own calls, its Agent calls included, stamped with the task call.
    for call_id in ("main-1", "agent-a", "agent-b"):
        assert_stamped(calls[call_id], TASK_CALL, acp_agent["subagent_id"])
    # Level 3: its sub-agents' calls keep their innermost parent, the Agent call.
    assert_stamped(calls["sub-a-1"], "agent-a", by_parent["agent-a"]["subagent_id"])
    assert_stamped(calls["sub-b-1"], "agent-b", by_parent["agent-b"]["subagent_id"])
    started = [e for e in every if e["kind"] == "SubagentStartedEvent"]
    assert [(e["parent_tool_use_id"], e.get("parent_subagent_id")) for e in started] == [
        (TASK_CALL, None), ("agent-a", acp_agent["subagent_id"]), ("agent-b", acp_agent["subagent_id"]),
    ]
    # The ACP agent's process ended with its sub-agent.
    assert agent_pids(tmp_path) and not any(alive(pid) for pid in agent_pids(tmp_path))
