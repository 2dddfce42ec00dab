"""Fixtures shared by every test folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import AsyncIterator

import pytest

from tests.servers import RunningServer, taskwire_server, isolated_settings

IN_CI = bool(os.environ.get("CI"))
REPO = Path(__file__).resolve().parents[1]


def need(condition: bool, reason: str) -> None:
    """Skip when ``condition`` is false, except in CI, where a missing dependency is a failure."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[RunningServer]:
    """A taskwire server with default settings (forwarding off), scripted LLM."""
    async with taskwire_server(isolated_settings(tmp_path)) as running:
        yield running
