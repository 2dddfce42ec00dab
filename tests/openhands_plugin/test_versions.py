"""Safe across OpenHands versions: what the plugin relies on inside OpenHands holds in the pinned
release (and a moved piece is named); loaded into another release (the real one before it,
1.57.0), or with a flag it cannot read, the agent-server runs as without the plugin and its log
says why, once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.openhands_plugin.agent_server import agent_server, run_watched, stamped, start_conversation
from tests.openhands_plugin.helpers import mock_llm, openhands_env, workspace_with_agents
from tests.services import need_openhands, need_openhands_previous

OFF = "taskwire-openhands 0.1.0: sub-agent forwarding is off: "


async def in_openhands(tmp_path: Path, code: str) -> dict[str, list[str]]:
    """``code`` (which prints one JSON line) in the OpenHands venv; what it printed."""
    process = await asyncio.create_subprocess_exec(
        need_openhands(), "-c", code, env=openhands_env(tmp_path / "home"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()[-3000:]
    return json.loads(out.decode().strip().splitlines()[-1])


CHECK = """
import json
from taskwire_openhands.contract import contract_problems, version_problems
{prepare}
print(json.dumps({{"version": version_problems(), "contract": contract_problems()}}))
"""


async def test_what_the_plugin_relies_on_holds_in_the_pinned_openhands(tmp_path: Path) -> None:
    # The contract test: it names whatever moved when the pins change.
    assert await in_openhands(tmp_path, CHECK.format(prepare="")) == {"version": [], "contract": []}


async def test_a_piece_that_moved_is_named(tmp_path: Path) -> None:
    # A stand-in for a later OpenHands: TaskManager no longer asks for a sub-visualizer, and the
    # event service lost its fan-out.
    prepare = """
from openhands.tools.task import manager
from openhands.agent_server import event_service
manager.TaskManager._get_conversation = lambda self, **kw: None
event_service.EventService.__dataclass_fields__.pop("_pub_sub")
"""
    found = await in_openhands(tmp_path, CHECK.format(prepare=prepare))
    assert found["version"] == []
    assert found["contract"] == ["moved: TaskManager._get_conversation asks parent._visualizer.create_sub_visualizer",
                                 "moved: EventService._pub_sub is a PubSub field"]


PREVIOUS = "1.57.0"


async def test_on_another_release_the_server_works_and_says_once_why_forwarding_is_off(tmp_path: Path) -> None:
    # The real release before the pinned one (make openhands-previous), the plugin installed
    # beside it without its pins, as after an upgrade or a downgrade of OpenHands under it.
    python = need_openhands_previous()
    async with mock_llm(tmp_path, "parallel") as llm, agent_server(tmp_path / "server", python=python) as server:
        conversation = await start_conversation(server, llm.url, workspace_with_agents(tmp_path / "ws"))
        frames = await run_watched(server, conversation)
        events = await server.client.get(f"/api/conversations/{conversation}/events/search", params={"limit": 100})
        search = await server.client.get(f"/api/conversations/{conversation}/subagent_events/search")
        log = server.log_messages()
    # It ran its tree to the end, its sub-agents too (their results are in the parent's
    # history), and nothing was stamped or added.
    assert frames[-1]["value"] == "finished" and not stamped(frames)
    results = [e for e in events.json()["items"] if e["kind"] == "ObservationEvent" and e.get("tool_name") == "task"]
    assert len(results) == 3 and not any(r["observation"].get("is_error") for r in results), results
    assert search.status_code == 404
    assert [m for m in log if "taskwire-openhands" in m] == [OFF + "; ".join(
        f"{name} is {PREVIOUS}, this plugin was tested with 1.58.2 only"
        for name in ("openhands-agent-server", "openhands-sdk", "openhands-tools"))]


async def test_a_flag_it_cannot_read_leaves_forwarding_off_and_says_so_once(tmp_path: Path) -> None:
    async with agent_server(tmp_path / "server", forward="maybe") as server:
        search = await server.client.get("/openapi.json")
        log = server.log_messages()
    assert not [p for p in search.json()["paths"] if "subagent_events" in p]
    assert [m for m in log if "taskwire-openhands" in m] == [OFF + "OH_FORWARD_SUBAGENT_EVENTS='maybe' is not true or false"]
