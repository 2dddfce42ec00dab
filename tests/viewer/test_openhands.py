"""The viewer draws an OpenHands tree as it draws a native one: a card per sub-agent under the
``task`` call that spawned it, each ending ``completed``, every stored event taken in once."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, expect

from taskwire.llm.mock_server import create_mock_app
from tests.api.helpers import create
from tests.openhands.helpers import SCRIPTS, Setup, workspace_with_reviewer
from tests.servers import isolated_settings, serve_app
from tests.services import need_openhands
from tests.viewer.pages import WAIT_MS, open_viewer


async def test_viewer_shows_openhands_subagents_as_cards_under_their_task_calls(browser: Browser, tmp_path: Path) -> None:
    python = need_openhands()
    async with serve_app(create_mock_app(SCRIPTS / "two_builtin.yaml")) as mock_url:
        settings = isolated_settings(tmp_path, openhands_python=python, forward_subagent_events=True)
        async with open_viewer(browser, settings) as viewer:
            oh = Setup(viewer.server, mock_url, tmp_path / "unused.jsonl", workspace_with_reviewer(tmp_path / "ws"))
            info = await create(viewer.server, agent=oh.agent(), initial_message="Go.")
            await viewer.open(info["id"])
            await viewer.wait_for_status("finished")
            for description in ("alpha", "beta"):
                await expect(viewer.card_status(description)).to_have_text("completed", timeout=WAIT_MS)
            subagents = (await viewer.server.client.get(f"/api/conversations/{info['id']}/subagents")).json()
            assert await viewer.seqs() == await viewer.stored_seqs(info["id"])
            assert viewer.problems == []

    assert {s["description"] for s in subagents} == {"alpha", "beta"}
    assert {s["parent_tool_use_id"] for s in subagents} == {"call_main_0_0", "call_main_0_1"}
