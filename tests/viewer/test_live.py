"""The viewer while a run goes on: cards filling in live, reload and dropped connections
(each event once), cancelling one sub-agent. Sub-agents wait on gates the test opens, so every
step is awaited, never timed."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from playwright.async_api import Browser, expect

from taskwire.settings import Settings
from tests.api.helpers import all_events, create, scripted_agent
from tests.servers import isolated_settings
from tests.viewer.gates import Gates, gated_subagents_script
from tests.viewer.pages import WAIT_MS, Viewer, open_viewer


def gated_settings(tmp_path: Path) -> tuple[Gates, Settings]:
    gates = Gates(tmp_path / "gates")
    return gates, isolated_settings(tmp_path, forward_subagent_events=True, llm_script=gated_subagents_script(gates))


async def start_gated_run(viewer: Viewer, gates: Gates) -> str:
    """Start a run of two gated sub-agents and open it; returns once both have echoed and wait."""
    info = await create(viewer.server, agent=scripted_agent(gated_subagents_script(gates)), initial_message="Go.")
    await viewer.open(info["id"])
    await expect_echoed_and_waiting(viewer, "a", "b")
    return info["id"]


async def expect_echoed_and_waiting(viewer: Viewer, *names: str) -> None:
    """Each named sub-agent's card shows its echo while it still runs (it waits at its gate)."""
    for name in names:
        await expect(viewer.card_output(f"Echo subagent-{name}").first).to_contain_text(f"subagent-{name}", timeout=WAIT_MS)
        await expect(viewer.card_status(f"Echo subagent-{name}")).to_have_text("running")


async def finish_run(viewer: Viewer, gates: Gates, conversation_id: str, *names: str) -> None:
    """Open the named gates, wait for the run to end, and check the page showed it all once."""
    gates.open(*names)
    await viewer.wait_for_status("finished")
    await expect(viewer.card_status("Echo subagent-b")).to_have_text("completed", timeout=WAIT_MS)
    await assert_each_event_once(viewer, conversation_id)


async def assert_each_event_once(viewer: Viewer, conversation_id: str) -> None:
    """The page took in every stored event of the tree once, in order, and drew each call once."""
    assert await viewer.seqs() == await viewer.stored_seqs(conversation_id)
    events = await all_events(viewer.server, conversation_id, include_subagents="true")
    calls = [e["tool_call_id"] for e in events if e["kind"] == "ActionEvent"]
    drawn = Counter(await viewer.tool_call_ids())
    assert drawn == Counter(calls) and set(drawn.values()) == {1}


async def test_subagent_cards_fill_in_live_while_the_run_goes_on(browser: Browser, tmp_path: Path) -> None:
    gates, settings = gated_settings(tmp_path)
    async with open_viewer(browser, settings) as viewer:
        await viewer.open()
        page = viewer.page
        # Started from the page's prompt box: the server's own (scripted) model runs it.
        await page.fill("#prompt", "Run two sub-agents.")
        await page.keyboard.press("Control+Enter")
        await viewer.wait_for_status("running")
        await expect_echoed_and_waiting(viewer, "a", "b")
        # Labels arrive with the sub-agents' first events, not with the tree at the run's end.
        await expect(viewer.card_label("Echo subagent-a")).to_have_text("task-1")
        await expect(viewer.card_label("Echo subagent-b")).to_have_text("task-2")
        await expect(viewer.card("Echo subagent-a").locator(":scope > .card-head .cancel")).to_be_visible()
        gates.open("a")
        await expect(viewer.card_status("Echo subagent-a")).to_have_text("completed", timeout=WAIT_MS)
        await expect(viewer.card_status("Echo subagent-b")).to_have_text("running")
        await expect(viewer.status()).to_have_text("running")
        await expect(viewer.card("Echo subagent-a").locator(":scope > .card-head .cancel")).to_be_hidden()
        await finish_run(viewer, gates, page.url.rsplit("/", 1)[-1], "b")
    assert viewer.problems == []


async def test_reload_mid_run_shows_each_event_once(browser: Browser, tmp_path: Path) -> None:
    gates, settings = gated_settings(tmp_path)
    async with open_viewer(browser, settings) as viewer:
        conversation_id = await start_gated_run(viewer, gates)
        await viewer.page.reload()
        await expect_echoed_and_waiting(viewer, "a", "b")
        await finish_run(viewer, gates, conversation_id, "a", "b")
    assert viewer.problems == []


async def test_dropped_connection_resumes_after_the_last_seq_it_saw(browser: Browser, tmp_path: Path) -> None:
    gates, settings = gated_settings(tmp_path)
    async with open_viewer(browser, settings) as viewer:
        conversation_id = await start_gated_run(viewer, gates)
        seen = (await viewer.seqs())[-1]
        await viewer.page.evaluate("window.__taskwire.drop()")
        await finish_run(viewer, gates, conversation_id, "a", "b")  # the run goes on as it reconnects
        assert await viewer.page.evaluate("window.__taskwire.connects()") == 2
    first, resumed = viewer.socket_urls
    assert first.endswith("resend_mode=all")
    resumed_after = int(resumed.rsplit("after_seq=", 1)[1])
    assert "resend_mode=since" in resumed and resumed_after >= seen
    assert viewer.problems == []


async def test_cancelling_one_of_two_slow_subagents_marks_it_cancelled_while_the_other_completes(
    browser: Browser, tmp_path: Path
) -> None:
    gates, settings = gated_settings(tmp_path)
    async with open_viewer(browser, settings) as viewer:
        conversation_id = await start_gated_run(viewer, gates)
        cancel = viewer.card("Echo subagent-a").locator(":scope > .card-head .cancel")
        await cancel.focus()
        await viewer.page.keyboard.press("Enter")
        await expect(viewer.card_status("Echo subagent-a")).to_have_text("cancelled", timeout=WAIT_MS)
        await expect(cancel).to_be_hidden()
        await expect(viewer.card_status("Echo subagent-b")).to_have_text("running")
        await finish_run(viewer, gates, conversation_id, "b")
        await expect(viewer.card_status("Echo subagent-a")).to_have_text("cancelled")
        tree = {s["description"]: s["status"] for s in (await viewer.server.client.get(f"/api/conversations/{conversation_id}/subagents")).json()}
    assert tree == {"Echo subagent-a": "cancelled", "Echo subagent-b": "completed"}
    gates.open("a")
    assert viewer.problems == []


async def test_usage_comes_with_the_events_not_from_polling(browser: Browser, tmp_path: Path) -> None:
    gates, settings = gated_settings(tmp_path)
    async with open_viewer(browser, settings) as viewer:
        asked: list[str] = []
        viewer.page.on("request", lambda request: asked.append(request.url) if "/subagents" in request.url else None)
        conversation = await start_gated_run(viewer, gates)
        # Both sub-agents wait at their gates: their model calls so far show on their cards.
        for name in ("a", "b"):
            await expect(viewer.card_usage(f"Echo subagent-{name}")).to_contain_text("out tokens", timeout=WAIT_MS)
        await expect(viewer.usage()).to_contain_text("out tokens", timeout=WAIT_MS)
        assert asked == []  # nothing was polled while the run went on
        await finish_run(viewer, gates, conversation, "a", "b")


async def test_a_run_that_ends_in_error_says_why_beside_its_status(browser: Browser, tmp_path: Path) -> None:
    async with open_viewer(browser, isolated_settings(tmp_path)) as viewer:
        info = await create(viewer.server, agent=scripted_agent("/etc/hostname"), initial_message="Go.")
        await viewer.open(info["id"])
        await viewer.wait_for_status("failed")  # the badge's word for `error`
        reason = viewer.page.locator(".conversation-head .reason")
        await expect(reason).to_be_visible(timeout=WAIT_MS)
        await expect(reason).to_contain_text("outside the config folder")
