"""Controlling a real OpenHands run from taskwire: interrupt mid-delegation, a follow-up
message, one sub-agent cancelled, the driver killed, a bad spec."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

from tests.api.helpers import all_events, create
from tests.claude_sdk.watch import say
from tests.openhands.helpers import Setup, openhands_server
from tests.servers import isolated_settings, taskwire_server, wait_for_status

LONG = 180


async def running_subagents(oh: Setup, conversation: str, count: int) -> list[dict[str, Any]]:
    """Wait until ``count`` sub-agents run and each has done at least one step."""
    for _ in range(2400):
        subagents = (await oh.server.client.get(f"/api/conversations/{conversation}/subagents")).json()
        running = [s for s in subagents if s["status"] == "running"]
        if len(running) == count:
            steps = [await all_events(oh.server, conversation, parent_tool_use_id=s["parent_tool_use_id"], kind="ObservationEvent")
                     for s in running]
            if all(steps):
                return running
        await asyncio.sleep(0.05)
    raise AssertionError(f"never saw {count} running sub-agents: {subagents}")


async def test_interrupt_mid_delegation_cancels_subagents_then_a_message_continues(tmp_path: Path) -> None:
    async with openhands_server(tmp_path, "slow_subagents") as oh:
        info = await create(oh.server, agent=oh.agent(), workspace=str(oh.workspace), initial_message="Go.")
        await running_subagents(oh, info["id"], 2)

        response = await oh.server.client.post(f"/api/conversations/{info['id']}/interrupt")
        assert response.status_code == 200 and response.json()["status"] == "paused"

        subagents = (await oh.server.client.get(f"/api/conversations/{info['id']}/subagents")).json()
        assert sorted(s["status"] for s in subagents) == ["cancelled", "cancelled"]
        tasks = [e for e in await all_events(oh.server, info["id"], kind="ObservationEvent") if e["tool_name"] == "task"]
        assert len(tasks) == 2 and all(e["is_error"] for e in tasks)

        await say(oh.server, info["id"], "Continue.")
        done = await wait_for_status(oh.server.client, info["id"], {"finished", "error"}, timeout=LONG)
        assert done["status"] == "finished", done
        finish = [e for e in await all_events(oh.server, info["id"], kind="ObservationEvent") if e["tool_name"] == "finish"]
        assert [e["content"] for e in finish] == ["after the interrupt"]


async def test_follow_up_message_continues_the_same_openhands_conversation(tmp_path: Path) -> None:
    async with openhands_server(tmp_path, "followup") as oh:
        info = await create(oh.server, agent=oh.agent(), workspace=str(oh.workspace), initial_message="First.")
        assert (await wait_for_status(oh.server.client, info["id"], {"finished", "error"}, timeout=LONG))["status"] == "finished"
        await say(oh.server, info["id"], "Second.")
        done = await wait_for_status(oh.server.client, info["id"], {"finished", "error"}, timeout=LONG)
        assert done["status"] == "finished", done
        finish = [e["content"] for e in await all_events(oh.server, info["id"], kind="ObservationEvent") if e["tool_name"] == "finish"]
        # The script's turn 2 is served only to a request whose history holds both earlier turns.
        assert finish == ["first answer", "second answer"]
        subagents = (await oh.server.client.get(f"/api/conversations/{info['id']}/subagents")).json()
        assert [s["status"] for s in subagents] == ["completed"]


async def test_one_subagent_cancelled_ends_cancelled_while_its_sibling_goes_on(tmp_path: Path) -> None:
    async with openhands_server(tmp_path, "slow_subagents") as oh:
        info = await create(oh.server, agent=oh.agent(), workspace=str(oh.workspace), initial_message="Go.")
        running = await running_subagents(oh, info["id"], 2)
        target = next(s for s in running if s["description"] == "slow a")
        cancel = await oh.server.client.post(f"/api/conversations/{info['id']}/subagents/{target['subagent_id']}/cancel")
        assert cancel.status_code in (200, 202, 204), cancel.text
        for _ in range(2400):
            statuses = {s["description"]: s["status"] for s in (await oh.server.client.get(f"/api/conversations/{info['id']}/subagents")).json()}
            if statuses["slow a"] != "running":
                break
            await asyncio.sleep(0.05)
        assert statuses == {"slow a": "cancelled", "slow b": "running"}
        await oh.server.client.post(f"/api/conversations/{info['id']}/interrupt")


async def test_driver_killed_mid_run_is_an_agent_error_and_the_server_goes_on(tmp_path: Path) -> None:
    async with openhands_server(tmp_path, "slow_subagents") as oh:
        info = await create(oh.server, agent=oh.agent(), workspace=str(oh.workspace), initial_message="Go.")
        await running_subagents(oh, info["id"], 2)
        assert oh.server.runtime.openhands.pid is not None
        os.kill(oh.server.runtime.openhands.pid, signal.SIGKILL)

        done = await wait_for_status(oh.server.client, info["id"], {"finished", "error"}, timeout=LONG)
        assert done["status"] == "error"
        errors = await all_events(oh.server, info["id"], kind="AgentErrorEvent")
        assert errors and errors[-1]["code"] == "openhands_driver_exited"
        subagents = (await oh.server.client.get(f"/api/conversations/{info['id']}/subagents")).json()
        assert sorted(s["status"] for s in subagents) == ["error", "error"]
        tasks = [e for e in await all_events(oh.server, info["id"], kind="ObservationEvent") if e["tool_name"] == "task"]
        assert [e["status"] for e in tasks] == ["failed", "failed"]
        assert (await oh.server.client.get("/alive")).status_code == 200


async def test_without_the_interpreter_creating_one_is_a_clear_400(tmp_path: Path) -> None:
    # OH_OPENHANDS_PYTHON= (empty) says "none", even in a checkout where `make openhands` ran.
    async with taskwire_server(isolated_settings(tmp_path, openhands_python="")) as server:
        response = await server.client.post("/api/conversations", json={"agent": {"kind": "openhands"}})
        assert response.status_code == 400
        assert response.json()["code"] == "openhands_unavailable"
        detail = response.json()["detail"]
        assert "make openhands" in detail and "OH_OPENHANDS_PYTHON" in detail and "taskwire-openhands" in detail


async def test_unknown_tool_fails_the_run_with_a_clear_error(tmp_path: Path) -> None:
    async with openhands_server(tmp_path, "followup") as oh:
        info = await create(oh.server, agent=oh.agent(tools=["task", "no_such_tool"]), workspace=str(oh.workspace),
                            initial_message="Go.")
        done = await wait_for_status(oh.server.client, info["id"], {"finished", "error"}, timeout=LONG)
        assert done["status"] == "error"
        errors = await all_events(oh.server, info["id"], kind="AgentErrorEvent")
        assert errors and "no_such_tool" in errors[-1]["error"]


async def test_an_llm_error_ends_the_run_in_error_with_the_models_message(tmp_path: Path) -> None:
    async with openhands_server(tmp_path, "llm_error") as oh:
        info = await create(oh.server, agent=oh.agent(), workspace=str(oh.workspace), initial_message="Go.")
        done = await wait_for_status(oh.server.client, info["id"], {"finished", "error"}, timeout=LONG)
        assert done["status"] == "error"
        errors = await all_events(oh.server, info["id"], kind="AgentErrorEvent")
        assert errors and "the scripted model is down" in errors[-1]["error"]
        assert errors[-1]["code"].startswith("openhands_")


async def test_a_resumed_task_is_refused_with_an_observation_the_model_reads(tmp_path: Path) -> None:
    async with openhands_server(tmp_path, "resume") as oh:
        info = await create(oh.server, agent=oh.agent(), workspace=str(oh.workspace), initial_message="Go.")
        done = await wait_for_status(oh.server.client, info["id"], {"finished", "error"}, timeout=LONG)
        assert done["status"] == "finished", done
        (task,) = [e for e in await all_events(oh.server, info["id"], kind="ObservationEvent") if e["tool_name"] == "task"]
        assert task["is_error"] and "resume is not supported" in task["content"]
        assert (await oh.server.client.get(f"/api/conversations/{info['id']}/subagents")).json() == []
