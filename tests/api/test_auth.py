"""Session API keys on REST: every route but health needs one."""

from __future__ import annotations

from pathlib import Path
from typing import AsyncIterator

import httpx
import pytest

from tests.servers import RunningServer, isolated_settings, taskwire_server


@pytest.fixture
async def locked(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with taskwire_server(isolated_settings(tmp_path, session_api_keys=["k-1", "k-2"])) as running:
        yield running


async def test_rest_needs_a_valid_key_except_on_health_routes(locked: RunningServer) -> None:
    async with httpx.AsyncClient(base_url=locked.url) as anonymous:
        for path in ("/alive", "/health", "/ready", "/server_info"):
            assert (await anonymous.get(path)).status_code == 200
        for headers in ({}, {"X-Session-API-Key": "wrong"}, {"Authorization": "Bearer wrong"}):
            response = await anonymous.get("/api/conversations/search", headers=headers)
            assert response.status_code == 401
            assert response.json()["code"] == "unauthorized"
            assert "X-Session-API-Key" in response.json()["detail"]
        created = await anonymous.post("/api/conversations", json={"run": False})
        assert created.status_code == 401
        for headers in ({"X-Session-API-Key": "k-2"}, {"Authorization": "Bearer k-1"}):
            assert (await anonymous.get("/api/conversations/count", headers=headers)).status_code == 200
    assert (await locked.client.get("/api/conversations/count")).json() == 0


async def test_auth_failure_comes_before_validation(locked: RunningServer) -> None:
    async with httpx.AsyncClient(base_url=locked.url) as anonymous:
        response = await anonymous.post("/api/conversations", content=b"{broken")
        assert response.status_code == 401
