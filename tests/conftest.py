"""Fixtures shared by every test folder."""

from __future__ import annotations

from pathlib import Path
from typing import AsyncIterator

import pytest

from tests.servers import RunningServer, isolated_settings, taskwire_server
from tests.services import IN_CI, need  # noqa: F401  (re-exported for test folders)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[RunningServer]:
    """A taskwire server with default settings (forwarding off), scripted LLM."""
    async with taskwire_server(isolated_settings(tmp_path)) as running:
        yield running
