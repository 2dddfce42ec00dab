"""Hostile input over HTTP gets a clear 4xx ``{detail, code}``, never a 500, on both stores."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import AsyncIterator

import httpx
import pytest

from taskwire.settings import WebhookSpec
from tests.api.helpers import all_events, create, scripted_agent
from tests.servers import RunningServer, isolated_settings, taskwire_server, wait_for_status
from tests.services import postgres_schema_url

KEY = "hostile-test-key"
TOO_BIG = str(2**63)  # one past the largest seq either database holds


@pytest.fixture(params=["sqlite", "postgres"])
async def any_store_server(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunningServer]:
    """A server on SQLite, then on PostgreSQL."""
    extra = {"database_url": postgres_schema_url(request)} if request.param == "postgres" else {}
    async with taskwire_server(isolated_settings(tmp_path, **extra)) as running:
        yield running


def refused(response: httpx.Response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"detail", "code"} and body["detail"], body
    if code is not None:
        assert body["code"] == code, body
    return body


async def conversation_with_pages(server: RunningServer) -> str:
    """A conversation with more than one page of events (limit 1)."""
    info = await create(server)
    for n in range(3):
        response = await server.client.post(f"/api/conversations/{info['id']}/events", json={"content": str(n), "run": False})
        assert response.status_code == 202
    return info["id"]


async def test_integer_query_params_past_64_bits_are_422(any_store_server: RunningServer) -> None:
    server = any_store_server
    cid = (await create(server))["id"]
    for path in (f"/api/conversations/{cid}/events/search", f"/api/conversations/{cid}/events/count", f"/agui/{cid}"):
        for value in (TOO_BIG, "1" + "0" * 40, "-1"):
            refused(await server.client.get(path, params={"after_seq": value}), 422, "invalid_request")
    for path in (f"/api/conversations/{cid}/events/search", "/api/conversations/search"):
        refused(await server.client.get(path, params={"limit": TOO_BIG}), 422, "invalid_request")
    # The largest seq still answers: nothing after it.
    page = await server.client.get(f"/api/conversations/{cid}/events/search", params={"after_seq": str(2**63 - 1)})
    assert page.status_code == 200 and page.json()["items"] == []
    count = await server.client.get(f"/api/conversations/{cid}/events/count", params={"after_seq": str(2**63 - 1)})
    assert count.status_code == 200 and count.json() == 0


def hostile_page_ids(real: str) -> list[str]:
    payload, mac = real.split(".")
    nested = base64.urlsafe_b64encode(b"[" * 5000).decode()
    return [
        nested,
        f"{nested}.{mac}",
        base64.urlsafe_b64encode(json.dumps({"p": 2**63, "h": "0" * 16}).encode()).decode(),
        base64.urlsafe_b64encode(str(2**63).encode()).decode().rstrip("=") + "." + mac,
        f"{payload}.{mac[:-1]}{'B' if mac[-1] == 'A' else 'A'}",  # one character of the mac changed
        "garbage",
        "x" * 5000,
    ]


async def test_forged_or_garbage_page_ids_are_400_invalid_page_id(any_store_server: RunningServer) -> None:
    server = any_store_server
    cid = await conversation_with_pages(server)
    await create(server)  # a second conversation: the conversation search has a next page
    events = f"/api/conversations/{cid}/events/search"
    real_events = (await server.client.get(events, params={"limit": 1})).json()["next_page_id"]
    real_conversations = (await server.client.get("/api/conversations/search", params={"limit": 1})).json()["next_page_id"]
    for path, real in ((events, real_events), ("/api/conversations/search", real_conversations)):
        assert real is not None
        for page_id in hostile_page_ids(real):
            refused(await server.client.get(path, params={"limit": 1, "page_id": page_id}), 400, "invalid_page_id")
        assert (await server.client.get(path, params={"limit": 1, "page_id": real})).status_code == 200
    # A token is bound to its route: the events one is refused by the conversation search.
    response = await server.client.get("/api/conversations/search", params={"page_id": real_events})
    refused(response, 400, "invalid_page_id")


async def test_an_explicit_null_initial_message_is_422(server: RunningServer) -> None:
    body = refused(await server.client.post("/api/conversations", json={"initial_message": None}), 422, "invalid_request")
    assert "initial_message" in body["detail"]


@pytest.mark.parametrize("agent", [
    {"kind": "acp", "command": "true", "env": {"A": "b\x00c"}},
    {"kind": "acp", "command": "true", "env": {"A\x00": "b"}},
    {"kind": "acp", "command": "true", "cwd": "sub\x00dir"},
    {"kind": "acp", "command": "tr\x00ue", "args": []},
    {"kind": "acp", "command": "true", "args": ["\x00"]},
    {"kind": "claude_sdk", "env": {"ANTHROPIC_BASE_URL": "http://x\x00"}},
    {"kind": "claude_sdk", "cli_path": "/bin/\x00claude"},
])
async def test_a_nul_in_what_a_process_is_given_is_422_not_a_failed_run(server: RunningServer, agent: dict) -> None:
    """The OS cannot hand a NUL to a process: the request is refused, nothing is created."""
    before = (await server.client.get("/api/conversations/count")).json()
    body = refused(await server.client.post("/api/conversations", json={"agent": agent, "initial_message": "go"}),
                   422, "invalid_request")
    assert "NUL" in body["detail"]
    assert (await server.client.get("/api/conversations/count")).json() == before


async def test_workspaces_outside_the_roots_or_unnamable_are_400(server: RunningServer, tmp_path: Path) -> None:
    a_file = server.settings.workspace_path / "a-file"
    a_file.parent.mkdir(parents=True, exist_ok=True)
    a_file.write_text("not a folder")
    for workspace in (
        str(a_file),
        "/proc/taskwire-missing/x",
        "w" * 5000,
        "a\x00b",
        "",
        "/",
        "/etc",
        "../../outside",
        str(tmp_path.parent),
    ):
        response = await server.client.post("/api/conversations", json={"workspace": workspace})
        refused(response, 400, "invalid_workspace")
    refused(await server.client.get("/api/sub-agents", params={"workspace": "/"}), 400, "invalid_workspace")


async def test_workspaces_under_the_roots_are_taken(server: RunningServer, tmp_path: Path) -> None:
    relative = await create(server, workspace="projects/one")
    assert relative["workspace"] == str((server.settings.workspace_path / "projects" / "one").resolve())
    listed_root = tmp_path / "elsewhere"  # tmp_path is one of OH_WORKSPACE_ROOTS (isolated_settings)
    info = await create(server, workspace=str(listed_root))
    assert info["workspace"] == str(listed_root.resolve()) and listed_root.is_dir()


async def test_a_tool_call_with_a_nul_in_its_path_is_that_calls_error(server: RunningServer) -> None:
    script = (
        "lanes:\n  - name: main\n    turns:\n"
        "      - tool_calls:\n          - name: file_editor\n"
        '            arguments: {command: view, path: "a\\0b"}\n'
        "      - tool_calls:\n          - name: file_editor\n"
        "            arguments: {command: create, path: [not, a, string]}\n"
        "      - text: done\n"
    )
    info = await create(server, agent=scripted_agent(script), initial_message="go")
    done = await wait_for_status(server.client, info["id"], {"finished", "error"})
    assert done["status"] == "finished"
    events = await all_events(server, info["id"])
    actions = [e for e in events if e["kind"] == "ActionEvent"]
    observations = {e["tool_call_id"]: e for e in events if e["kind"] == "ObservationEvent"}
    assert len(actions) == 2 and all(a["tool_call_id"] in observations for a in actions)
    assert all(o["is_error"] for o in observations.values())
    assert "NUL" in observations[actions[0]["tool_call_id"]]["content"]
    assert not [e for e in events if e["kind"] == "AgentErrorEvent"]


async def test_a_chunked_body_over_the_limit_is_413(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, max_body_bytes=1000)) as server:

        async def chunks(total: int):
            for _ in range(total // 100):
                yield b" " * 100

        for path in ("/api/conversations", "/agui"):
            response = await server.client.post(path, content=chunks(5000), headers={"Content-Type": "application/json"})
            assert "content-length" not in response.request.headers
            refused(response, 413, "body_too_large")
        # Within the limit, a chunked body is read as usual.
        async def small():
            yield b'{"initial_message": '
            yield b'"hi", "run": false}'

        response = await server.client.post("/api/conversations", content=small(), headers={"Content-Type": "application/json"})
        assert response.status_code == 201, response.text


async def test_server_info_shows_webhooks_by_host_unless_a_key_is_sent(tmp_path: Path) -> None:
    secret_url = "http://127.0.0.1:9/hooks/tok_s3cret?token=s3cret"
    settings = isolated_settings(tmp_path, session_api_keys=[KEY], webhooks=[WebhookSpec(url=secret_url)])
    async with taskwire_server(settings) as server:
        async with httpx.AsyncClient(base_url=server.url) as anonymous:
            public = await anonymous.get("/server_info")
            wrong = await anonymous.get("/server_info", headers={"X-Session-API-Key": "wrong"})
        for response in (public, wrong):
            assert response.status_code == 200
            assert "s3cret" not in response.text
            assert response.json()["webhooks"][0]["host"] == "http://127.0.0.1:9"
        detailed = (await server.client.get("/server_info")).json()  # the client sends the key
        assert detailed["webhooks"][0]["url"] == secret_url


async def test_file_editor_views_a_huge_file_within_the_bound_and_refuses_to_edit_it_whole(server: RunningServer) -> None:
    """A view streams the file (head and tail, the rest counted); an edit, which reads the
    whole file, is refused past its limit as the call's own error."""
    script = (
        "lanes:\n  - name: main\n    turns:\n"
        "      - tool_calls:\n          - name: file_editor\n"
        "            arguments: {command: view, path: huge.log}\n"
        "      - tool_calls:\n          - name: file_editor\n"
        "            arguments: {command: view, path: huge.log, view_range: [500000, 500002]}\n"
        "      - tool_calls:\n          - name: file_editor\n"
        "            arguments: {command: str_replace, path: huge.log, old_str: line-7, new_str: x}\n"
        "      - text: done\n"
    )
    info = await create(server, agent=scripted_agent(script), run=False)
    line = "line-%07d " + "x" * 100 + "\n"
    with open(Path(info["workspace"]) / "huge.log", "w") as out:  # about 113 MB
        for n in range(1, 1_000_001):
            out.write(line % n)
    assert (await server.client.post(f"/api/conversations/{info['id']}/events", json={"content": "go"})).status_code < 300
    done = await wait_for_status(server.client, info["id"], {"finished", "error"}, timeout=120)
    assert done["status"] == "finished"
    events = await all_events(server, info["id"], kind="ObservationEvent")
    whole, ranged, edit = [e for e in events if e["tool_name"] == "file_editor"]
    assert not whole["is_error"] and len(whole["content"]) < 40_000
    assert "line-0000001" in whole["content"] and "line-1000000" in whole["content"] and "omitted" in whole["content"]
    assert [row.split("\t")[1][:12] for row in ranged["content"].splitlines()] == [
        "line-0500000", "line-0500001", "line-0500002"]
    assert edit["is_error"] and "MB" in edit["content"]
