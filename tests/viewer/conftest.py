"""Browser fixtures: Debian's chromium, driven by the Python ``playwright`` package.

A test tool's own browser download does not work on these machines, so the tests launch
``/usr/bin/chromium`` (``make browser`` installs it). Without it they skip, except in CI.
"""

from __future__ import annotations

import shutil
from typing import AsyncIterator

import pytest

from tests.services import need

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
async def browser() -> AsyncIterator[object]:
    """A headless chromium for one test."""
    path = chromium_path()
    need(path is not None, "Debian's chromium is not installed (apt-get install chromium, or `make browser`)")
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()
