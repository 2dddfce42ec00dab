"""The viewer page as tests see it: a page object speaking the viewer's domain."""

from __future__ import annotations

from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

from playwright.async_api import Browser, Locator, Page, expect

from taskwire.settings import Settings
from tests.api.socket_client import stored_seqs
from tests.servers import RunningServer, taskwire_server

WAIT_MS = 60_000
"""Generous: a loaded 2-core machine runs the server, the agents and chromium at once."""

# Every card as the page draws it: where it sits and what it holds.
_CARDS_JS = """() => [...document.querySelectorAll('.card')].map((card) => ({
  subagent_id: card.dataset.subagentId,
  description: card.dataset.description ?? null,
  status: card.dataset.status,
  spawned_by: card.closest('.item.call')?.dataset.toolCallId ?? null,
  parent: card.parentElement.closest('.card')?.dataset.subagentId ?? null,
  type: card.querySelector(':scope > .card-head .subagent-type').textContent,
  usage: card.querySelector(':scope > .card-head .usage').textContent,
  outputs: [...card.querySelectorAll(':scope > .card-body > .timeline > .item.call[data-tool="terminal"] > pre.output')]
    .map((pre) => pre.textContent),
}))"""


@dataclass
class Viewer:
    """One browser page on the viewer of a running server."""

    page: Page
    server: RunningServer
    problems: list[str] = field(default_factory=list)
    """Uncaught page errors and console errors, in order."""
    socket_urls: list[str] = field(default_factory=list)
    sent_frames: list[str] = field(default_factory=list)

    async def open(self, conversation_id: str | None = None) -> None:
        await self.page.goto(f"{self.server.url}/" + (f"#/c/{conversation_id}" if conversation_id else ""))

    def status(self) -> Locator:
        """The open conversation's status badge."""
        return self.page.locator(".conversation-head > .badge")

    async def wait_for_status(self, status: str) -> None:
        await expect(self.status()).to_have_text(status, timeout=WAIT_MS)

    def card(self, description: str) -> Locator:
        return self.page.locator(f'.card[data-description="{description}"]')

    def card_status(self, description: str) -> Locator:
        return self.card(description).locator(":scope > .card-head .badge")

    def card_label(self, description: str) -> Locator:
        """The card's per-tree name (``task-1``)."""
        return self.card(description).locator(":scope > .card-head .subagent-label")

    def card_usage(self, description: str) -> Locator:
        return self.card(description).locator(":scope > .card-head .usage")

    def usage(self) -> Locator:
        """The open conversation's usage, in its header."""
        return self.page.locator(".conversation-head .usage").first

    def card_output(self, description: str) -> Locator:
        return self.card(description).locator(":scope > .card-body > .timeline > .item.call > pre.output")

    async def cards(self) -> list[dict[str, Any]]:
        """Every sub-agent card on the page, in document order."""
        return await self.page.evaluate(_CARDS_JS)

    async def seqs(self) -> list[int]:
        """The ``seq`` of every stored event the page took in, in order."""
        return await self.page.evaluate("window.__taskwire.seqs()")

    async def tool_call_ids(self) -> list[str]:
        """The ``tool_call_id`` of every tool-call item on the page."""
        return await self.page.evaluate(
            "() => [...document.querySelectorAll('.item.call')].map((el) => el.dataset.toolCallId)"
        )

    async def stored_seqs(self, conversation_id: str) -> list[int]:
        """Every stored ``seq`` of the conversation's tree, from the REST API."""
        return await stored_seqs(self.server, conversation_id, include_subagents="true")


@asynccontextmanager
async def open_viewer(browser: Browser, settings: Settings, *, height: int = 800) -> AsyncIterator[Viewer]:
    """A real server for ``settings`` and a fresh browser page on its viewer (not loaded yet)."""
    async with taskwire_server(settings) as server:
        context = await browser.new_context(viewport={"width": 1366, "height": height})
        try:
            page = await context.new_page()
            viewer = Viewer(page, server)
            page.on("pageerror", lambda error: viewer.problems.append(f"page error: {error}"))
            page.on("console", lambda m: m.type == "error" and viewer.problems.append(f"console: {m.text}"))

            def on_socket(socket: Any) -> None:
                viewer.socket_urls.append(socket.url)
                socket.on("framesent", lambda payload: viewer.sent_frames.append(str(payload)))

            page.on("websocket", on_socket)
            yield viewer
        finally:
            await context.close()
