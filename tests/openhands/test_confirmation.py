"""OpenHands' confirmation mode as taskwire approvals: a sub-agent whose type confirms every
action asks a person through a ``PermissionRequestEvent`` in its own stream; the answer goes back."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.api.helpers import all_events, create
from tests.openhands.helpers import openhands_server
from tests.permissions.helpers import answer
from tests.servers import wait_for_status

CAREFUL = "---\nname: careful\ndescription: Asks before acting.\ntools: [task_tracker]\npermission_mode: always_confirm\n---\nAsk first.\n"


async def test_a_subagent_in_confirmation_mode_asks_a_person_under_its_own_call(tmp_path: Path) -> None:
    async with openhands_server(tmp_path, "confirm") as oh:
        (oh.workspace / ".agents/agents/careful.md").write_text(CAREFUL)
        info = await create(oh.server, agent=oh.agent(), workspace=str(oh.workspace), initial_message="Go.")
        requests: list = []
        for _ in range(1200):
            requests = await all_events(oh.server, info["id"], kind="PermissionRequestEvent", include_subagents="true")
            subagent_requests = [e for e in requests if "parent_tool_use_id" in e]
            if subagent_requests:
                break
            await asyncio.sleep(0.05)
        subagents = (await oh.server.client.get(f"/api/conversations/{info['id']}/subagents")).json()
        assert [s["status"] for s in subagents] == ["running"]
        stamped = await all_events(oh.server, info["id"], parent_tool_use_id=subagents[0]["parent_tool_use_id"],
                                   kind="PermissionRequestEvent")
        assert [(e["tool_name"], e["arguments"].get("command")) for e in stamped] == [("task_tracker", "view")]

        assert (await answer(oh.server, info["id"], stamped[0]["request_id"], decision="allow")).status_code == 200
        done = await wait_for_status(oh.server.client, info["id"], {"finished", "error"}, timeout=180)
        assert done["status"] == "finished", done
        sub = await all_events(oh.server, info["id"], parent_tool_use_id=subagents[0]["parent_tool_use_id"])
        assert [e["outcome"] for e in sub if e["kind"] == "PermissionResolvedEvent"][:1] == ["allowed"]
        assert sub[-1]["kind"] == "SubagentFinishedEvent" and sub[-1]["result"] == "careful done"
