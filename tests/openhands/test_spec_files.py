"""``subagent_types`` files are confined to the conversation's workspace, like every file a
request names (docs/security.md): refused at creation with 400 ``invalid_workspace``, before
anything is stored or made."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.servers import isolated_settings, taskwire_server

# Creation only checks that an interpreter is named; nothing is run here.
SETTINGS = {"openhands_python": "/usr/bin/python3"}


@pytest.mark.parametrize("name", ["/etc/passwd", "../../../../etc/shadow", "agents/../../escape.md"])
async def test_a_file_outside_the_workspace_is_refused(tmp_path: Path, name: str) -> None:
    async with taskwire_server(isolated_settings(tmp_path, **SETTINGS)) as server:
        response = await server.client.post("/api/conversations", json={
            "agent": {"kind": "openhands", "subagent_types": [name]}, "initial_message": "Go.", "run": False})
        assert response.status_code == 400, response.text
        assert response.json()["code"] == "invalid_workspace"
        assert "subagent_types file" in response.json()["detail"]
        assert (await server.client.get("/api/conversations/count")).json() == 0
        assert not (tmp_path / "workspace").exists() or not any((tmp_path / "workspace").iterdir())


async def test_a_link_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    (workspace / "agents").mkdir(parents=True)
    os.symlink("/etc/passwd", workspace / "agents" / "reviewer.md")
    async with taskwire_server(isolated_settings(tmp_path, **SETTINGS)) as server:
        response = await server.client.post("/api/conversations", json={
            "agent": {"kind": "openhands", "subagent_types": ["agents/reviewer.md"]}, "workspace": str(workspace),
            "run": False})
        assert response.status_code == 400, response.text
        assert response.json()["code"] == "invalid_workspace"
        assert "leads outside" in response.json()["detail"]
        assert (await server.client.get("/api/conversations/count")).json() == 0


async def test_a_file_inside_the_workspace_is_taken(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    (workspace / "agents").mkdir(parents=True)
    (workspace / "agents" / "reviewer.md").write_text("---\nname: reviewer\ndescription: Reviews.\n---\nReview.\n")
    async with taskwire_server(isolated_settings(tmp_path, **SETTINGS)) as server:
        response = await server.client.post("/api/conversations", json={
            "agent": {"kind": "openhands", "subagent_types": ["agents/reviewer.md", "./agents/../agents/reviewer.md"]},
            "workspace": str(workspace), "run": False})
        assert response.status_code == 400  # a `..` is refused even when it comes back in
        response = await server.client.post("/api/conversations", json={
            "agent": {"kind": "openhands", "subagent_types": ["agents/reviewer.md"]}, "workspace": str(workspace),
            "run": False})
        assert response.status_code == 201, response.text
        assert response.json()["agent"]["subagent_types"] == ["agents/reviewer.md"]
