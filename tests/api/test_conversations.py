"""Conversations over REST, run by the scripted LLM (in process and over HTTP in both dialects)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from taskwire.llm.mock_server import create_mock_app
from taskwire.llm.script import UNSCRIPTED_REPLY
from tests.api.helpers import all_events, create, scripted_agent
from tests.servers import RunningServer, isolated_settings, serve_app, taskwire_server, wait_for_status
from tests.services import wait_until

REPO = Path(__file__).resolve().parents[2]
HELLO = str(REPO / "config/demo/hello.yaml")


def tool_rows(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["kind"], e.get("tool_name", "")) for e in events if e["kind"] in ("ActionEvent", "ObservationEvent")]


async def test_scripted_conversation_runs_a_command_and_finishes(server: RunningServer) -> None:
    info = await create(server, agent=scripted_agent(HELLO), initial_message="say hello")
    assert info["status"] in ("running", "finished", "idle")
    done = await wait_for_status(server.client, info["id"], {"finished", "error"})
    assert done["status"] == "finished"
    events = await all_events(server, info["id"])
    statuses = [e["value"] for e in events if e["kind"] == "ConversationStateUpdateEvent" and e["key"] == "status"]
    assert statuses == ["idle", "running", "finished"]
    observation = next(e for e in events if e["kind"] == "ObservationEvent" and e["tool_name"] == "terminal")
    assert "main-agent" in observation["content"] and observation["is_error"] is False
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    assert all("parent_tool_use_id" not in e and "subagent_id" not in e for e in events)
    assert done["last_seq"] == events[-1]["seq"]


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
async def test_conversation_runs_against_mock_llm_over_http(server: RunningServer, tmp_path: Path, dialect: str) -> None:
    log = tmp_path / "requests.jsonl"
    async with serve_app(create_mock_app(HELLO, log_path=log)) as mock_url:
        base = f"{mock_url}/v1" if dialect == "openai" else mock_url
        agent = {"kind": "native", "llm": {"api": dialect, "model": "mock", "base_url": base, "api_key": "k"}}
        info = await create(server, agent=agent, initial_message="say hello")
        done = await wait_for_status(server.client, info["id"], {"finished", "error"})
    assert done["status"] == "finished", await all_events(server, info["id"])
    events = await all_events(server, info["id"])
    assert tool_rows(events) == [
        ("ActionEvent", "terminal"),
        ("ObservationEvent", "terminal"),
        ("ActionEvent", "finish"),
        ("ObservationEvent", "finish"),
    ]
    assert done["usage"]["llm_calls"] == 2 or done["usage"]["input_tokens"] > 0
    assert len(log.read_text().splitlines()) == 2


async def test_unknown_conversation_is_404_everywhere(server: RunningServer) -> None:
    for method, path in [
        ("GET", "/api/conversations/nope"),
        ("DELETE", "/api/conversations/nope"),
        ("POST", "/api/conversations/nope/run"),
        ("POST", "/api/conversations/nope/pause"),
        ("GET", "/api/conversations/nope/events/search"),
        ("GET", "/api/conversations/nope/events/count"),
        ("GET", "/api/conversations/nope/subagents"),
    ]:
        response = await server.client.request(method, path)
        assert response.status_code == 404, (method, path)
        assert response.json()["code"] == "conversation_not_found"
        assert "nope" in response.json()["detail"]


async def test_a_conversation_created_with_nothing_is_idle_until_its_first_message(server: RunningServer) -> None:
    info = await create(server)
    assert info["status"] == "idle"
    events = await all_events(server, info["id"])
    assert [(e["kind"], e.get("value")) for e in events] == [("ConversationStateUpdateEvent", "idle")]
    sent = await server.client.post(f"/api/conversations/{info['id']}/events", json={"content": "Run the demo."})
    assert sent.status_code == 202
    assert (await wait_for_status(server.client, info["id"], {"finished", "error"}))["status"] == "finished"


async def test_conversations_created_together_each_start_with_their_own_whole_stream(server: RunningServer) -> None:
    # A burst of creations (one batch of new trees in the store, answers without a read back):
    # each 201 names its own last event, and each stream starts idle, message, [running].
    idle, queued, started = await asyncio.gather(
        asyncio.gather(*(create(server) for _ in range(10))),
        asyncio.gather(*(create(server, initial_message=f"hold {n}", run=False) for n in range(10))),
        asyncio.gather(*(create(server, agent=scripted_agent(HELLO), initial_message="say hello") for _ in range(10))),
    )
    for info in idle + queued:
        events = await all_events(server, info["id"])
        assert info["last_seq"] == events[-1]["seq"] == len(events)
        assert [(e["kind"], e.get("value")) for e in events][0] == ("ConversationStateUpdateEvent", "idle")
    for n, info in enumerate(queued):
        assert info["status"] == "idle"
        events = await all_events(server, info["id"])
        assert [(e["kind"], e.get("content")) for e in events][1:] == [("MessageEvent", f"hold {n}")]
    for info in started:
        assert info["status"] == "running"
        done = await wait_for_status(server.client, info["id"], {"finished", "error"})
        assert done["status"] == "finished"
        events = await all_events(server, info["id"])
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert [(e["kind"], e.get("value")) for e in events[:3]] == [
            ("ConversationStateUpdateEvent", "idle"), ("MessageEvent", None), ("ConversationStateUpdateEvent", "running")
        ]
        assert 3 <= info["last_seq"] <= done["last_seq"]


async def test_run_true_without_a_message_is_a_400_and_creates_nothing(server: RunningServer) -> None:
    response = await server.client.post("/api/conversations", json={"run": True})
    assert response.status_code == 400
    assert response.json()["code"] == "nothing_to_run" and "initial_message" in response.json()["detail"]
    assert (await server.client.get("/api/conversations/count")).json() == 0


async def test_a_follow_up_to_the_finished_demo_gets_a_scripted_reply_and_finishes(server: RunningServer) -> None:
    info = await create(server, agent=scripted_agent(HELLO), initial_message="say hello")
    await wait_for_status(server.client, info["id"], {"finished"})
    await server.client.post(f"/api/conversations/{info['id']}/events", json={"content": "And now?"})
    done = await wait_for_status(server.client, info["id"], {"finished", "error"})
    events = await all_events(server, info["id"])
    assert done["status"] == "finished"
    assert not [e for e in events if e["kind"] == "AgentErrorEvent"]
    assert [e for e in events if e["kind"] == "MessageEvent"][-1]["content"] == UNSCRIPTED_REPLY


async def test_run_while_running_is_409(server: RunningServer) -> None:
    script = server.settings.workspace_path / "slow.yaml"
    script.write_text(
        "lanes:\n  - name: main\n    turns:\n      - text: slow answer\n        delay: 2\n"
    )
    info = await create(server, agent=scripted_agent(str(script)), initial_message="go")
    response = await server.client.post(f"/api/conversations/{info['id']}/run")
    assert response.status_code == 409
    assert response.json()["code"] == "conversation_running"
    await wait_for_status(server.client, info["id"], {"finished"})
    again = await server.client.post(f"/api/conversations/{info['id']}/run")
    assert again.status_code == 200


async def test_invalid_bodies_are_422_with_a_reason(server: RunningServer) -> None:
    bad = [
        b"{not json",
        b'{"agent": {"kind": "native", "max_iterations": "many"}}',
        b'{"agent": {"kind": "martian"}}',
        b'{"agent": {"kind": "native", "tools": ["teleport"]}}',
        b'{"initial_message": 42}',
        b'{"unexpected": true}',
        b"[]",
    ]
    for body in bad:
        response = await server.client.post(
            "/api/conversations", content=body, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 422, body
        assert response.json()["code"] == "invalid_request" and response.json()["detail"]
    assert (await server.client.get("/api/conversations/count")).json() == 0


async def test_huge_body_is_refused_and_the_server_keeps_serving(server: RunningServer) -> None:
    info = await create(server, agent=scripted_agent(HELLO), initial_message="hi")
    await wait_for_status(server.client, info["id"], {"finished"})
    before = (await server.client.get(f"/api/conversations/{info['id']}/events/count")).json()
    huge = b'{"content": "' + b"x" * (server.settings.max_body_bytes + 10) + b'"}'
    response = await server.client.post(
        f"/api/conversations/{info['id']}/events", content=huge, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json()["code"] == "body_too_large"
    assert (await server.client.get("/alive")).status_code == 200
    after = (await server.client.get(f"/api/conversations/{info['id']}/events/count")).json()
    assert after == before


async def test_sending_a_message_continues_the_conversation(server: RunningServer) -> None:
    script = server.settings.workspace_path / "chat.yaml"
    script.write_text(
        "lanes:\n  - name: main\n    turns:\n      - text: first answer\n      - text: second answer\n"
    )
    info = await create(server, agent=scripted_agent(str(script)), initial_message="one")
    await wait_for_status(server.client, info["id"], {"finished"})
    response = await server.client.post(f"/api/conversations/{info['id']}/events", json={"content": "two"})
    assert response.status_code == 202
    await wait_for_status(server.client, info["id"], {"finished"})
    messages = [
        (e["role"], e["content"])
        for e in await all_events(server, info["id"])
        if e["kind"] == "MessageEvent"
    ]
    assert messages == [("user", "one"), ("assistant", "first answer"), ("user", "two"), ("assistant", "second answer")]


async def test_file_editor_refuses_paths_outside_the_workspace(server: RunningServer) -> None:
    script = server.settings.workspace_path / "escape.yaml"
    script.write_text(
        "lanes:\n  - name: main\n    turns:\n"
        "      - tool_calls:\n          - name: file_editor\n"
        "            arguments: {command: view, path: ../../../../etc/passwd}\n"
        "      - tool_calls:\n          - name: file_editor\n"
        "            arguments: {command: create, path: notes/a.txt, file_text: hello}\n"
        "      - text: done\n"
    )
    info = await create(server, agent=scripted_agent(str(script)), initial_message="go")
    await wait_for_status(server.client, info["id"], {"finished"})
    observations = [e for e in await all_events(server, info["id"]) if e["kind"] == "ObservationEvent"]
    assert observations[0]["is_error"] is True and "outside the workspace" in observations[0]["content"]
    assert observations[1]["is_error"] is False
    assert (Path(info["workspace"]) / "notes/a.txt").read_text() == "hello"


async def test_llm_failure_becomes_an_agent_error_and_status_error(server: RunningServer) -> None:
    script = server.settings.workspace_path / "broken.yaml"
    script.write_text("lanes:\n  - name: main\n    turns:\n      - error: the model is down\n")
    info = await create(server, agent=scripted_agent(str(script)), initial_message="go")
    done = await wait_for_status(server.client, info["id"], {"finished", "error"})
    assert done["status"] == "error"
    errors = [e for e in await all_events(server, info["id"]) if e["kind"] == "AgentErrorEvent"]
    assert len(errors) == 1 and "the model is down" in errors[0]["error"]
    assert (await server.client.get("/alive")).status_code == 200


async def test_interrupt_closes_the_running_tool_call_as_failed(server: RunningServer) -> None:
    script = server.settings.workspace_path / "sleepy.yaml"
    script.write_text(
        "lanes:\n  - name: main\n    turns:\n"
        "      - tool_calls:\n          - name: terminal\n            arguments: {command: sleep 30}\n"
        "      - text: woke up\n"
    )
    info = await create(server, agent=scripted_agent(str(script)), initial_message="go")
    for _ in range(200):
        kinds = [e["kind"] for e in await all_events(server, info["id"])]
        if "ActionEvent" in kinds:
            break
        await asyncio.sleep(0.05)
    response = await server.client.post(f"/api/conversations/{info['id']}/interrupt")
    assert response.status_code == 200
    assert response.json()["status"] == "paused"
    closing = [e for e in await all_events(server, info["id"]) if e["kind"] == "ObservationEvent"]
    assert closing and closing[0]["status"] == "failed" and closing[0]["is_error"] is True


async def test_delete_removes_the_conversation_and_its_events(server: RunningServer) -> None:
    info = await create(server, agent=scripted_agent(HELLO), initial_message="hi")
    await wait_for_status(server.client, info["id"], {"finished"})
    assert (await server.client.delete(f"/api/conversations/{info['id']}")).status_code == 204
    assert (await server.client.get(f"/api/conversations/{info['id']}")).status_code == 404
    assert (await server.client.get("/api/conversations/count")).json() == 0


async def test_conversation_search_pages_newest_first(server: RunningServer) -> None:
    ids = [(await create(server, agent=scripted_agent(HELLO), run=False))["id"] for _ in range(5)]
    page1 = (await server.client.get("/api/conversations/search", params={"limit": 2})).json()
    page2 = (await server.client.get("/api/conversations/search", params={"limit": 2, "page_id": page1["next_page_id"]})).json()
    page3 = (await server.client.get("/api/conversations/search", params={"limit": 2, "page_id": page2["next_page_id"]})).json()
    seen = [c["id"] for c in page1["items"] + page2["items"] + page3["items"]]
    assert seen == list(reversed(ids))
    assert page3["next_page_id"] is None
    assert (await server.client.get("/api/conversations/count", params={"status": "idle"})).json() == 5
    bad = await server.client.get("/api/conversations/search", params={"page_id": "garbage"})
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_page_id"


async def test_health_routes(server: RunningServer) -> None:
    assert (await server.client.get("/alive")).json() == {"status": "ok"}
    assert (await server.client.get("/health")).status_code == 200
    ready = await server.client.get("/ready")
    assert ready.status_code == 200 and ready.json()["checks"] == {"store": "ok", "bus": "ok"}
    info = (await server.client.get("/server_info")).json()
    assert info["forward_subagent_events"] is False and info["name"] == "taskwire"
    assert (await server.client.get("/openapi.json")).status_code == 200


TWO_RUNS = """
lanes:
  - name: main
    turns:
      - tool_calls: [{name: terminal, arguments: {command: echo first-run}}]
      - tool_calls: [{name: finish, arguments: {message: first run done}}]
      - tool_calls: [{name: finish, arguments: {message: second run saw the first}}]
"""


async def test_an_idle_conversation_leaves_memory_and_resumes_from_the_store(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, idle_unload_seconds=0.2)) as server:
        info = await create(server, agent=scripted_agent(TWO_RUNS), initial_message="first")
        assert (await wait_for_status(server.client, info["id"], {"finished", "error"}))["status"] == "finished"

        async def loaded() -> int:
            return (await server.client.get("/server_info")).json()["loaded_conversations"]

        for _ in range(100):
            if await loaded() == 0:
                break
            await asyncio.sleep(0.05)
        assert await loaded() == 0

        response = await server.client.post(f"/api/conversations/{info['id']}/events", json={"role": "user", "content": "second"})
        assert response.status_code < 300, response.text
        done = await wait_for_status(server.client, info["id"], {"finished", "error"})
        events = await all_events(server, info["id"])
    assert done["status"] == "finished"
    # The model's history was rebuilt from the stream: its third turn, not its first again.
    finishes = [e["arguments"]["message"] for e in events if e["kind"] == "ActionEvent" and e["tool_name"] == "finish"]
    assert finishes == ["first run done", "second run saw the first"]
    assert [e["seq"] for e in events] == sorted({e["seq"] for e in events})


async def test_idle_unload_seconds_zero_keeps_conversations_loaded(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, idle_unload_seconds=0)) as server:
        info = await create(server, agent=scripted_agent(TWO_RUNS), initial_message="first", run=False)
        await asyncio.sleep(0.3)
        assert (await server.client.get("/server_info")).json()["loaded_conversations"] == 1
        assert server.runtime.loaded(info["id"]) is not None


async def test_a_finished_native_tree_holds_nothing_in_memory_whatever_the_unload_setting(tmp_path: Path) -> None:
    """Its history is its stream: once its run ends, the root is unloaded at once (even with
    the idle unload off), and a follow-up loads it from the store and carries on."""
    async with taskwire_server(isolated_settings(tmp_path, idle_unload_seconds=0)) as server:
        info = await create(server, agent=scripted_agent(TWO_RUNS), initial_message="first")
        assert (await wait_for_status(server.client, info["id"], {"finished", "error"}))["status"] == "finished"
        await wait_until(lambda: server.runtime.loaded(info["id"]) is None, timeout=30, what="the finished root to be unloaded")
        assert server.runtime.loaded_count == 0
        response = await server.client.post(f"/api/conversations/{info['id']}/events", json={"role": "user", "content": "second"})
        assert response.status_code < 300, response.text
        assert (await wait_for_status(server.client, info["id"], {"finished", "error"}))["status"] == "finished"
        await wait_until(lambda: server.runtime.loaded(info["id"]) is None, timeout=30, what="the root to be unloaded again")
        events = await all_events(server, info["id"])
    finishes = [e["arguments"]["message"] for e in events if e["kind"] == "ActionEvent" and e["tool_name"] == "finish"]
    assert finishes == ["first run done", "second run saw the first"]


async def test_a_running_conversation_is_never_unloaded(tmp_path: Path) -> None:
    script = """
lanes:
  - name: main
    turns:
      - tool_calls: [{name: terminal, arguments: {command: sleep 1}}]
      - tool_calls: [{name: finish, arguments: {message: slept}}]
"""
    async with taskwire_server(isolated_settings(tmp_path, idle_unload_seconds=0.1)) as server:
        info = await create(server, agent=scripted_agent(script), initial_message="sleep")
        await asyncio.sleep(0.6)  # several sweeps while the command runs
        assert (await server.client.get("/server_info")).json()["loaded_conversations"] == 1
        done = await wait_for_status(server.client, info["id"], {"finished", "error"})
        assert done["status"] == "finished"


async def test_usage_is_sent_as_an_event_after_each_model_call(server: RunningServer) -> None:
    info = await create(server, agent=scripted_agent(HELLO), initial_message="say hello")
    done = await wait_for_status(server.client, info["id"], {"finished", "error"})
    events = await all_events(server, info["id"], kind="ConversationStateUpdateEvent")
    usages = [e["value"] for e in events if e["key"] == "usage"]
    assert [u["llm_calls"] for u in usages] == [1, 2]
    assert {key: usages[-1][key] for key in done["usage"]} == done["usage"]
    # ... and what each call added, for traces and metrics.
    assert [u["added"]["llm_calls"] for u in usages] == [1, 1]
    assert {u["added"]["model"] for u in usages} == {"scripted"} and all(u["added"]["started_at"] for u in usages)
    statuses = [e["value"] for e in events if e["key"] == "status"]
    assert statuses == ["idle", "running", "finished"]
