"""The viewer: a reply box on a running sub-agent's card sends a message the sub-agent reads
before its next model call; cards show their own cost and their subtree's, the header the
tree's total; the box is gone once the sub-agent ends."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.async_api import Browser, expect

from taskwire.llm.mock_server import create_mock_app
from tests.api.helpers import create
from tests.api.steering import MODEL, SUB_PROMPT, gated_script, subagent_waiting, user_texts
from tests.api.test_costs import chain, openai_agent, table_price
from tests.servers import isolated_settings, serve_app
from tests.viewer.pages import WAIT_MS, open_viewer


async def test_the_reply_box_reaches_the_subagents_next_request(browser: Browser, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    log = tmp_path / "requests.jsonl"
    async with serve_app(create_mock_app(gated_script(gate), log_path=log)) as url:
        async with open_viewer(browser, isolated_settings(tmp_path, forward_subagent_events=True)) as viewer:
            try:
                agent = {"kind": "native", "llm": {"api": "openai", "model": MODEL, "base_url": f"{url}/v1", "api_key": "k"}}
                info = await create(viewer.server, agent=agent, initial_message="Main work.")
                await viewer.open(info["id"])
                await subagent_waiting(viewer.server, info["id"])
                card = viewer.card("Sub")
                box = card.locator(":scope > .card-body > .reply")
                await expect(box).to_be_visible(timeout=WAIT_MS)
                await box.locator(".reply-input").fill("Check the README too.")
                await box.locator(".reply-send").click()
                await expect(box.locator(".reply-input")).to_have_value("", timeout=WAIT_MS)  # taken
                await expect(card.locator(".timeline")).to_contain_text("Check the README too.", timeout=WAIT_MS)
            finally:
                gate.touch()
            await viewer.wait_for_status("finished")
            await expect(box).to_be_hidden()
            await expect(viewer.card_usage("Sub")).to_contain_text("$", timeout=WAIT_MS)
            assert viewer.problems == []
    bodies = [json.loads(json.loads(line)["body"]) for line in log.read_text().splitlines()]
    sub = [b for b in bodies if user_texts(b)[:1] == [SUB_PROMPT]]
    assert user_texts(sub[1])[-1] == "Check the README too."


async def test_cards_show_their_own_and_subtree_cost_and_the_header_the_trees(browser: Browser, tmp_path: Path) -> None:
    async with serve_app(create_mock_app(chain(2))) as url:
        async with open_viewer(browser, isolated_settings(tmp_path, forward_subagent_events=True)) as viewer:
            info = await create(viewer.server, agent=openai_agent(url), initial_message="Main.")
            await viewer.open(info["id"])
            await viewer.wait_for_status("finished")
            own, subtree, tree = (f"${float(table_price(n)):.4f}" for n in (2, 4, 6))
            await expect(viewer.card_usage("L1")).to_contain_text(own, timeout=WAIT_MS)
            await expect(viewer.card("L1").locator(":scope > .card-head .subtree-usage")).to_have_text(
                f"with its sub-agents: 4 calls · {subtree}", timeout=WAIT_MS)
            await expect(viewer.page.locator(".conversation-head .tree-usage")).to_have_text(f"tree: 6 calls · {tree}")
            await expect(viewer.usage()).to_contain_text(own)
            assert viewer.problems == []


async def test_a_root_paused_by_its_budget_says_which_beside_its_status(browser: Browser, tmp_path: Path) -> None:
    script = {"lanes": [{"name": "main", "turns": [
        {"tool_calls": [{"name": "think", "arguments": {"thought": "one"}}], "usage": {"input_tokens": 1000, "output_tokens": 100}},
        {"tool_calls": [{"name": "think", "arguments": {"thought": "two"}}], "usage": {"input_tokens": 1000, "output_tokens": 100}}]}]}
    async with serve_app(create_mock_app(script)) as url:
        async with open_viewer(browser, isolated_settings(tmp_path)) as viewer:
            info = await create(viewer.server, agent={**openai_agent(url), "max_tokens": 1500}, initial_message="Go.")
            await viewer.open(info["id"])
            await viewer.wait_for_status("paused")
            reason = viewer.page.locator(".conversation-head .reason")
            await expect(reason).to_have_text("max_tokens budget passed: 2200 tokens used of 1500 tokens", timeout=WAIT_MS)
            assert viewer.problems == []
