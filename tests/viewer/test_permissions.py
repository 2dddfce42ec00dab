"""The viewer and permission requests: each shows inside the card of the sub-agent that asks,
the task call and the header say something waits, a click answers, and an answer given
elsewhere updates the page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from tests.api.helpers import create, scripted_agent
from tests.permissions.helpers import answer, finish, lane, task, terminal, wait_pending
from tests.servers import isolated_settings
from tests.viewer.pages import WAIT_MS, open_viewer

SCRIPT = json.dumps({"strict": True, "lanes": [
    lane("sub-a", "Ask A.", {"tool_calls": [terminal("echo clicked-a")]}, {"tool_calls": [finish("a done")]}),
    lane("sub-b", "Ask B.", {"tool_calls": [terminal("echo never-b")]}, {"tool_calls": [finish("b done")]}),
    lane("main", None, {"tool_calls": [task("Ask A", "Ask A."), task("Ask B", "Ask B.")]},
         {"tool_calls": [finish("all done")]}),
]})


@pytest.mark.parametrize("forwarding", [True, False], ids=["forwarding-on", "forwarding-off"])
async def test_a_request_shows_in_its_card_a_click_runs_the_tool_and_the_marks_clear(
    browser: Browser, tmp_path: Path, forwarding: bool
) -> None:
    settings = isolated_settings(tmp_path, forward_subagent_events=forwarding)
    async with open_viewer(browser, settings) as viewer:
        server = viewer.server
        info = await create(server, agent=scripted_agent(SCRIPT, approval="always"), initial_message="Go.")
        cid = info["id"]
        waiting = {r["title"]: r for r in await wait_pending(server, cid, 2)}
        await viewer.open(cid)
        page = viewer.page
        card_a, card_b = viewer.card("Ask A"), viewer.card("Ask B")
        box_a = card_a.locator(".permission")
        await expect(box_a).to_have_count(1, timeout=WAIT_MS)
        await expect(box_a.locator(".permission-tool")).to_have_text("terminal")
        await expect(box_a.locator(".permission-title")).to_have_text("echo clicked-a")
        await expect(box_a.locator(".permission-arguments")).to_contain_text('"command": "echo clicked-a"')
        await expect(box_a.locator("button.permission-option")).to_have_text(["Allow", "Always allow this tool here", "Reject"])
        # Inside its own card, not its sibling's; the card, its task call and the header say so.
        await expect(card_b.locator(".permission")).to_have_count(1)
        await expect(card_b.locator(".permission-title")).to_have_text("echo never-b")
        await expect(card_b.locator(".permission")).to_have_attribute("data-state", "pending")
        await expect(box_a).to_have_attribute("data-state", "pending")
        await expect(card_a).to_have_class("card asks")
        task_a = page.locator(f'.item.call[data-tool-call-id="{waiting["echo clicked-a"]["parent_tool_use_id"]}"]')
        await expect(task_a).to_have_class("item call waits")
        header = page.locator(".conversation-head .waiting-badge")
        await expect(header).to_have_text("2 waiting for you")
        await expect(viewer.status()).to_have_text("running")

        await box_a.get_by_role("button", name="Allow", exact=True).click()
        await expect(box_a).to_have_attribute("data-state", "allowed", timeout=WAIT_MS)
        await expect(header).to_have_text("1 waiting for you", timeout=WAIT_MS)
        await expect(card_a).not_to_have_class("card asks")
        if forwarding:  # the tool ran: its output is in the card
            await expect(viewer.card_output("Ask A").first).to_contain_text("clicked-a", timeout=WAIT_MS)

        # Answered elsewhere: the page follows.
        elsewhere = await answer(server, cid, waiting["echo never-b"]["request_id"], decision="reject", reason="not now")
        assert elsewhere.status_code == 200
        box_b = card_b.locator(".permission")
        await expect(box_b).to_have_attribute("data-state", "rejected" if forwarding else "answered", timeout=WAIT_MS)
        await expect(box_b.locator("button")).to_have_count(0)
        await expect(header).to_be_hidden(timeout=WAIT_MS)
        await expect(page.locator(".asks, .waits")).to_have_count(0)
        await viewer.wait_for_status("finished")
    assert viewer.problems == []
