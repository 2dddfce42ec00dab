"""Fixtures for ``taskwire acp``'s tests."""

from __future__ import annotations

from pathlib import Path
from typing import AsyncIterator

import pytest

from tests.servers import RunningServer, isolated_settings, taskwire_server


@pytest.fixture
async def forwarding_server(tmp_path: Path) -> AsyncIterator[RunningServer]:
    """A taskwire server with ``OH_FORWARD_SUBAGENT_EVENTS`` on."""
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as running:
        yield running
