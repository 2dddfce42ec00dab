"""A server running an OpenHands tree is killed (``kill -9``): its driver does not outlive it,
and the restarted server closes what was left open, as for every bridged backend."""

from __future__ import annotations

from pathlib import Path

from taskwire.llm.mock_server import create_mock_app
from tests.openhands.helpers import SCRIPTS, drivers, workspace_with_reviewer
from tests.servers import ServerProcess, isolated_settings, serve_app, taskwire_server
from tests.services import need_openhands, wait_until


async def test_server_killed_mid_delegation_leaves_no_driver_and_restart_closes_the_tree(tmp_path: Path) -> None:
    python = need_openhands()
    settings = isolated_settings(tmp_path, openhands_python=python)
    workspace = workspace_with_reviewer(tmp_path / "workspace" / "oh")
    async with serve_app(create_mock_app(SCRIPTS / "slow_subagents.yaml")) as mock_url:
        first = ServerProcess.sharing("first", tmp_path, settings)
        first.env.update(OH_OPENHANDS_PYTHON=python, OH_WORKSPACE_PATH=str(tmp_path / "workspace"))
        before = drivers()
        await first.start()
        try:
            agent = {"kind": "openhands", "llm": {"model": "openai/scripted", "base_url": f"{mock_url}/v1", "api_key": "k"}}
            response = await first.client.post("/api/conversations", json={
                "agent": agent, "workspace": str(workspace), "initial_message": "Go."})
            assert response.status_code == 201, response.text
            cid = response.json()["id"]

            async def both_running() -> bool:
                subagents = (await first.client.get(f"/api/conversations/{cid}/subagents")).json()
                return [s["status"] for s in subagents] == ["running", "running"]

            await wait_until(both_running, timeout=120, what="two running sub-agents")
            ours = drivers() - before
            assert ours
        finally:
            await first.kill()
            await first.client.aclose()
        # Its stdin closed with the server: the driver ends too.
        await wait_until(lambda: not (drivers() & ours), timeout=30, what="the orphaned driver to end")

    async with taskwire_server(settings) as server:
        assert (await server.client.get(f"/api/conversations/{cid}")).json()["status"] == "paused"
        subagents = (await server.client.get(f"/api/conversations/{cid}/subagents")).json()
        assert [s["status"] for s in subagents] == ["error", "error"]
        tasks = (await server.client.get(f"/api/conversations/{cid}/events/search", params={"kind": "ObservationEvent"})).json()
        assert sorted(e["status"] for e in tasks["items"] if e["tool_name"] == "task") == ["failed", "failed"]
