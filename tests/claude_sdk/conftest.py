"""Fixtures for the claude_sdk backend's tests."""

from __future__ import annotations

import pytest

from tests.claude_sdk.sdk_messages import DispatchLog


@pytest.fixture
def session() -> DispatchLog:
    """A fresh dispatcher, recording every action it returns."""
    return DispatchLog()
