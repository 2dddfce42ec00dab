"""The viewer page in a real browser: the demo, nesting, the follow filter, session keys."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path

from playwright.async_api import Browser, expect

from tests.api.helpers import all_events, create, scripted_agent
from tests.api.test_subagents import chain_script
from tests.conftest import REPO
from tests.servers import isolated_settings, wait_for_status
from tests.viewer.pages import WAIT_MS, open_viewer

TWO = str(REPO / "config/demo/two_subagents.yaml")
KEY = "viewer-key-123"


async def test_demo_started_from_the_page_nests_each_subagent_under_its_task_call(
    browser: Browser, tmp_path: Path
) -> None:
    settings = isolated_settings(tmp_path, forward_subagent_events=True, llm_script=TWO)
    async with open_viewer(browser, settings, height=980) as viewer:
        await viewer.open()
        page = viewer.page
        await expect(page.locator("#demo-form")).to_be_visible(timeout=WAIT_MS)
        await page.select_option("#demo-scenario", "two_subagents")
        # Keyboard only: from the scenario list, Tab to "Start demo" and press Enter.
        await page.focus("#demo-scenario")
        await page.keyboard.press("Tab")
        await expect(page.locator("#start-demo")).to_be_focused()
        await page.keyboard.press("Enter")
        await viewer.wait_for_status("finished")
        conversation_id = page.url.rsplit("/", 1)[-1]
        await expect(page.locator(f'.conversation-list a[data-id="{conversation_id}"]')).to_be_visible()
        await expect(viewer.card_status("Echo subagent-a")).to_have_text("completed", timeout=WAIT_MS)
        await expect(viewer.card_status("Echo subagent-b")).to_have_text("completed", timeout=WAIT_MS)

        tree = {s["description"]: s for s in (await viewer.server.client.get(f"/api/conversations/{conversation_id}/subagents")).json()}
        cards = {c["description"]: c for c in await viewer.cards()}
        assert set(cards) == {"Echo subagent-a", "Echo subagent-b"}
        for description, card in cards.items():
            name = description.removeprefix("Echo ")
            assert card["subagent_id"] == tree[description]["subagent_id"]
            assert card["spawned_by"] == tree[description]["parent_tool_use_id"]
            assert card["parent"] is None and card["type"] == "general-purpose"
            assert card["status"] == "completed" and "out tokens" in card["usage"]
            assert [o.splitlines()[-1] for o in card["outputs"]] == [name]
        main_output = page.locator('.timeline.root > .item.call[data-tool="terminal"] > pre.output')
        await expect(main_output).to_contain_text("main-agent")

        assert await viewer.seqs() == await viewer.stored_seqs(conversation_id)
        shot = tmp_path / "viewer-demo.png"
        await page.screenshot(path=str(shot))
        if os.environ.get("TASKWIRE_UPDATE_DOCS"):
            shutil.copyfile(shot, REPO / "docs" / "viewer.png")
    assert shot.stat().st_size > 0
    assert viewer.problems == []


async def test_depth_three_chain_renders_three_nested_levels(browser: Browser, tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, forward_subagent_events=True)
    async with open_viewer(browser, settings) as viewer:
        info = await create(viewer.server, agent=scripted_agent(chain_script(3)), initial_message="Go deep.")
        await viewer.open(info["id"])
        await viewer.wait_for_status("finished")
        await expect(viewer.card_status("Level 3")).to_have_text("completed", timeout=WAIT_MS)
        cards = await viewer.cards()
        events = await all_events(viewer.server, info["id"], include_subagents="true")
    calls = {e["arguments"]["description"]: e for e in events if e["kind"] == "ActionEvent" and e["tool_name"] == "task"}
    assert [c["description"] for c in cards] == ["Level 1", "Level 2", "Level 3"]
    level1, level2, level3 = cards
    assert (level1["parent"], level2["parent"], level3["parent"]) == (None, level1["subagent_id"], level2["subagent_id"])
    for card in cards:
        call = calls[card["description"]]
        assert card["spawned_by"] == call["tool_call_id"]
        # The call that spawned it sits in its parent's stream: the root's, or the parent sub-agent's.
        assert call.get("subagent_id") == card["parent"]
    assert level3["outputs"][0].splitlines()[-1] == "level-3"
    assert all(c["status"] == "completed" for c in cards)
    assert viewer.problems == []


async def test_follow_filter_shows_one_subagent_and_escape_shows_everything(browser: Browser, tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, forward_subagent_events=True)
    async with open_viewer(browser, settings) as viewer:
        info = await create(viewer.server, agent=scripted_agent(TWO), initial_message="Run the demo.")
        await wait_for_status(viewer.server.client, info["id"], {"finished"})
        await viewer.open(info["id"])
        await viewer.wait_for_status("finished")
        page = viewer.page
        card_a, card_b = viewer.card("Echo subagent-a"), viewer.card("Echo subagent-b")
        await expect(card_b).to_be_visible(timeout=WAIT_MS)
        subagent_a = await card_a.get_attribute("data-subagent-id")
        await page.select_option("#follow", subagent_a)
        await expect(card_b).to_be_hidden()
        await expect(page.locator(".timeline.root > .item.message.user")).to_be_hidden()
        await expect(card_a).to_be_visible()
        await expect(viewer.card_output("Echo subagent-a")).to_contain_text("subagent-a")
        await page.keyboard.press("Escape")
        await expect(card_b).to_be_visible()
        await expect(page.locator("#follow")).to_have_value("")
        # The card's own Follow button does the same.
        await card_b.locator(":scope > .card-head .follow").click()
        await expect(card_a).to_be_hidden()
        await expect(page.locator("#follow")).to_have_value(await card_b.get_attribute("data-subagent-id") or "")
    assert viewer.problems == []


async def test_page_asks_for_the_session_key_and_sends_it_in_the_first_frame_never_a_url(
    browser: Browser, tmp_path: Path
) -> None:
    settings = isolated_settings(tmp_path, forward_subagent_events=True, llm_script=TWO, session_api_keys=[KEY])
    async with open_viewer(browser, settings) as viewer:
        page = viewer.page
        urls: list[str] = []
        page.on("request", lambda request: urls.append(request.url))
        await viewer.open()
        dialog = page.locator("#auth-dialog")
        await expect(dialog).to_be_visible(timeout=WAIT_MS)
        await page.fill("#api-key", "not-the-key")
        await page.keyboard.press("Enter")
        await expect(page.locator("#auth-error")).to_have_text("That key was refused.")
        await page.fill("#api-key", KEY)
        await page.keyboard.press("Enter")
        await expect(dialog).to_be_hidden()
        await page.click("#start-demo")
        await viewer.wait_for_status("finished")
        await expect(viewer.card_status("Echo subagent-b")).to_have_text("completed", timeout=WAIT_MS)
        await page.reload()  # the key is kept for the tab: no second prompt
        await viewer.wait_for_status("finished")
        await expect(dialog).to_be_hidden()
    assert urls and not [u for u in urls + viewer.socket_urls if KEY in u]
    auth_frames = [json.loads(f) for f in viewer.sent_frames if KEY in f]
    assert len(viewer.socket_urls) == 2 and Counter(json.dumps(f) for f in auth_frames) == {
        json.dumps({"type": "auth", "session_api_key": KEY}): 2
    }
    assert viewer.sent_frames[0] == json.dumps({"type": "auth", "session_api_key": KEY}, separators=(",", ":"))
    # The refused key's check answers 401, which the browser reports; nothing else went wrong.
    assert all("401" in p for p in viewer.problems), viewer.problems
