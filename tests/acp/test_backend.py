"""The ``acp`` agent kind through the real server, driving a fake ACP agent subprocess."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.acp.helpers import (
    agent_pids,
    alive,
    assert_stamped,
    assert_unstamped,
    fake_agent,
    last_per_call,
    wait_for_event,
)
from tests.api.helpers import all_events
from tests.servers import RunningServer, wait_for_status

DONE = {"finished", "error", "paused"}


async def start(server: RunningServer, agent: dict[str, Any], message: str | None = None, **body: Any) -> str:
    response = await server.client.post(
        "/api/conversations", json={"agent": agent, **({"initial_message": message} if message else {}), **body}
    )
    assert response.status_code == 201, response.text
    return response.json()["id"]


async def run_to_end(server: RunningServer, agent: dict[str, Any], message: str) -> tuple[str, dict[str, Any]]:
    conversation_id = await start(server, agent, message)
    return conversation_id, await wait_for_status(server.client, conversation_id, DONE, timeout=90)


async def agent_error(server: RunningServer, conversation_id: str) -> dict[str, Any]:
    (error,) = await all_events(server, conversation_id, kind="AgentErrorEvent")
    return error


async def subagents(server: RunningServer, conversation_id: str) -> dict[str, dict[str, Any]]:
    response = await server.client.get(f"/api/conversations/{conversation_id}/subagents")
    return {entry["parent_tool_use_id"]: entry for entry in response.json()}


# -- attribution ----------------------------------------------------------------------------


async def test_subagent_calls_are_stamped_and_kept_out_of_the_parent_stream(forwarding_server: RunningServer, tmp_path: Path) -> None:
    server = forwarding_server
    conversation_id, info = await run_to_end(server, fake_agent(tmp_path), "subagents")
    assert info["status"] == "finished"
    assert info["usage"]["input_tokens"] == 100 and info["usage"]["cache_read_tokens"] == 5

    own = await all_events(server, conversation_id)
    for event in own:
        assert_unstamped(event)
    own_calls = last_per_call(own)
    assert set(own_calls) == {"main-1", "agent-a", "agent-b", "sub-b-1"}  # sub-b-1's first event landed here
    messages = [e["content"] for e in own if e["kind"] == "MessageEvent" and e["role"] == "assistant"]
    assert messages == ["Working.\n\nDone."]

    spawned = await subagents(server, conversation_id)
    assert {k: (v["status"], v["result"]) for k, v in spawned.items()} == {
        "agent-a": ("completed", "sub-a result"),
        "agent-b": ("completed", "sub-b result"),
    }
    every = await all_events(server, conversation_id, include_subagents="true")
    calls = last_per_call(every)
    assert_stamped(calls["sub-a-1"], "agent-a", spawned["agent-a"]["subagent_id"])
    assert_stamped(calls["sub-b-1"], "agent-b", spawned["agent-b"]["subagent_id"])
    for call_id in ("main-1", "agent-a", "agent-b"):
        assert_unstamped(calls[call_id])
    sub_text = [e for e in every if e["kind"] == "MessageEvent" and e["content"] == "sub-a says hi"]
    assert len(sub_text) == 1
    assert_stamped(sub_text[0], "agent-a", spawned["agent-a"]["subagent_id"])


async def test_parent_named_only_on_progress_moves_the_calls_later_events(forwarding_server: RunningServer, tmp_path: Path) -> None:
    server = forwarding_server
    conversation_id, _ = await run_to_end(server, fake_agent(tmp_path), "subagents")
    spawned = await subagents(server, conversation_id)
    child = spawned["agent-b"]["subagent_id"]
    landed = [e for e in await all_events(server, conversation_id) if e.get("tool_call_id") == "sub-b-1"]
    assert [e["status"] for e in landed] == ["pending"]
    in_child = [e for e in await all_events(server, child) if e.get("tool_call_id") == "sub-b-1"]
    assert [e["status"] for e in in_child] == ["in_progress", "in_progress", "completed"]
    for event in in_child:
        assert_stamped(event, "agent-b", child)
    lifecycle = [e["kind"] for e in await all_events(server, child) if e["kind"].startswith("Subagent")]
    assert lifecycle == ["SubagentStartedEvent", "SubagentFinishedEvent"]


# -- closing calls ------------------------------------------------------------------------


async def test_interrupt_closes_calls_in_flight_with_their_parents(forwarding_server: RunningServer, tmp_path: Path) -> None:
    server = forwarding_server
    conversation_id = await start(server, fake_agent(tmp_path), "hang")
    await wait_for_event(server, conversation_id, lambda e: e.get("tool_call_id") == "sub-h-2")
    assert (await server.client.post(f"/api/conversations/{conversation_id}/interrupt")).status_code == 200
    info = await wait_for_status(server.client, conversation_id, {"paused"})
    assert info["status"] == "paused"

    calls = last_per_call(await all_events(server, conversation_id, include_subagents="true"))
    assert {k: v["status"] for k, v in calls.items()} == {
        "main-h": "failed", "agent-h": "failed", "sub-h-1": "failed", "sub-h-2": "cancelled",
    }
    assert_unstamped(calls["main-h"])
    assert_stamped(calls["sub-h-1"], "agent-h")
    assert_stamped(calls["sub-h-2"], "agent-h")
    assert "the turn was cancelled" in calls["sub-h-2"]["content"][-1]["content"]["text"]
    assert (await subagents(server, conversation_id))["agent-h"]["status"] == "cancelled"

    # The agent acknowledged the cancel: the same session takes the next message.
    await server.client.post(f"/api/conversations/{conversation_id}/events", json={"content": "still there?"})
    assert (await wait_for_status(server.client, conversation_id, {"finished", "error"}))["status"] == "finished"
    answers = [e["content"] for e in await all_events(server, conversation_id, kind="MessageEvent", source="agent")]
    assert answers[-1] == "echo: still there?"
    assert len(agent_pids(tmp_path)) == 1


async def test_cancelling_a_peer_subagent_alone_is_refused_over_acp(forwarding_server: RunningServer, tmp_path: Path) -> None:
    # ACP has no request to stop one of the agent's own sub-agents: a clear 400, nothing stopped.
    server = forwarding_server
    conversation_id = await start(server, fake_agent(tmp_path), "hang")
    await wait_for_event(server, conversation_id, lambda e: e.get("tool_call_id") == "sub-h-2")
    subagent_id = (await subagents(server, conversation_id))["agent-h"]["subagent_id"]
    response = await server.client.post(f"/api/conversations/{conversation_id}/subagents/{subagent_id}/cancel")
    assert response.status_code == 400
    assert response.json()["code"] == "subagent_not_cancellable"
    assert "interrupt the conversation" in response.json()["detail"]
    assert (await subagents(server, conversation_id))["agent-h"]["status"] == "running"
    assert (await server.client.post(f"/api/conversations/{conversation_id}/interrupt")).status_code == 200
    assert (await wait_for_status(server.client, conversation_id, {"paused"}))["status"] == "paused"


async def test_new_message_supersedes_the_running_turn(forwarding_server: RunningServer, tmp_path: Path) -> None:
    server = forwarding_server
    conversation_id = await start(server, fake_agent(tmp_path), "hang")
    await wait_for_event(server, conversation_id, lambda e: e.get("tool_call_id") == "sub-h-2")
    await server.client.post(f"/api/conversations/{conversation_id}/events", json={"content": "never mind"})
    assert (await wait_for_status(server.client, conversation_id, {"finished", "error"}))["status"] == "finished"
    every = await all_events(server, conversation_id, include_subagents="true")
    calls = last_per_call(every)
    assert calls["sub-h-2"]["status"] == "cancelled"
    assert_stamped(calls["sub-h-2"], "agent-h")
    assert "superseded" in calls["main-h"]["content"][-1]["content"]["text"]
    answers = [e["content"] for e in every if e["kind"] == "MessageEvent" and e["source"] == "agent"]
    assert answers == ["Starting.", "echo: never mind"]


async def test_pending_call_at_turn_end_is_cancelled_and_the_turn_finishes(forwarding_server: RunningServer, tmp_path: Path) -> None:
    conversation_id, info = await run_to_end(forwarding_server, fake_agent(tmp_path), "dangling")
    assert info["status"] == "finished"
    call = last_per_call(await all_events(forwarding_server, conversation_id))["main-d"]
    assert (call["status"], call["is_error"]) == ("cancelled", True)
    assert "stopped before it ran" in call["content"][-1]["content"]["text"]


async def test_call_that_ran_without_a_result_fails_the_turn(forwarding_server: RunningServer, tmp_path: Path) -> None:
    conversation_id, info = await run_to_end(forwarding_server, fake_agent(tmp_path), "incomplete")
    assert info["status"] == "error"
    assert last_per_call(await all_events(forwarding_server, conversation_id))["main-i"]["status"] == "failed"
    error = await agent_error(forwarding_server, conversation_id)
    assert error["code"] == "incomplete_tool_call" and "main-i" in error["error"]


async def test_status_the_acp_package_does_not_know_is_kept(forwarding_server: RunningServer, tmp_path: Path) -> None:
    conversation_id, info = await run_to_end(forwarding_server, fake_agent(tmp_path), "status")
    assert info["status"] == "finished"
    assert last_per_call(await all_events(forwarding_server, conversation_id))["main-s"]["status"] == "cancelled"


# -- failures: clear errors, never a hang, no process left ----------------------------------


async def test_missing_binary_is_an_agent_error(forwarding_server: RunningServer, tmp_path: Path) -> None:
    agent = fake_agent(tmp_path, command=str(tmp_path / "no-such-agent"))
    conversation_id, info = await run_to_end(forwarding_server, agent, "hello")
    assert info["status"] == "error"
    error = await agent_error(forwarding_server, conversation_id)
    assert error["code"] == "acp_not_found" and "no-such-agent" in error["error"]


async def test_agent_that_dies_on_start_is_an_agent_error_with_its_stderr(forwarding_server: RunningServer, tmp_path: Path) -> None:
    conversation_id, info = await run_to_end(forwarding_server, fake_agent(tmp_path, "--crash-on-start"), "hello")
    assert info["status"] == "error"
    error = await agent_error(forwarding_server, conversation_id)
    assert error["code"] == "acp_start_failed"
    assert "exit code 2" in error["error"] and "cannot start (on purpose)" in error["error"]
    assert not any(alive(pid) for pid in agent_pids(tmp_path))


async def test_startup_timeout_is_an_agent_error_and_leaves_no_process(forwarding_server: RunningServer, tmp_path: Path) -> None:
    agent = fake_agent(tmp_path, "--never-answer", startup_timeout=1)
    conversation_id, info = await run_to_end(forwarding_server, agent, "hello")
    assert info["status"] == "error"
    error = await agent_error(forwarding_server, conversation_id)
    assert error["code"] == "acp_startup_timeout" and "initialize" in error["error"]
    assert agent_pids(tmp_path) and not any(alive(pid) for pid in agent_pids(tmp_path))


async def test_crash_mid_turn_closes_its_calls_and_is_an_agent_error(forwarding_server: RunningServer, tmp_path: Path) -> None:
    conversation_id, info = await run_to_end(forwarding_server, fake_agent(tmp_path), "crash")
    assert info["status"] == "error"
    assert last_per_call(await all_events(forwarding_server, conversation_id))["main-c"]["status"] == "failed"
    error = await agent_error(forwarding_server, conversation_id)
    assert error["code"] == "acp_crashed"
    assert "exit code 3" in error["error"] and "crashing on purpose" in error["error"]
    assert not any(alive(pid) for pid in agent_pids(tmp_path))


async def test_silent_agent_times_out_and_is_stopped(forwarding_server: RunningServer, tmp_path: Path) -> None:
    conversation_id, info = await run_to_end(forwarding_server, fake_agent(tmp_path, idle_timeout=1), "hang")
    assert info["status"] == "error"
    assert (await agent_error(forwarding_server, conversation_id))["code"] == "acp_idle_timeout"
    calls = last_per_call(await all_events(forwarding_server, conversation_id, include_subagents="true"))
    assert {k: v["status"] for k, v in calls.items() if k.startswith("sub-")} == {"sub-h-1": "failed", "sub-h-2": "cancelled"}
    assert_stamped(calls["sub-h-1"], "agent-h")
    assert not any(alive(pid) for pid in agent_pids(tmp_path))


# -- session ------------------------------------------------------------------------------


@pytest.mark.parametrize(("permissions", "answer", "status"), [("allow", "yes", "completed"), ("deny", "no", "failed")])
async def test_permission_requests_follow_the_setting(
    forwarding_server: RunningServer, tmp_path: Path, permissions: str, answer: str, status: str
) -> None:
    agent = fake_agent(tmp_path, permissions=permissions)
    conversation_id, _ = await run_to_end(forwarding_server, agent, "permission")
    call = last_per_call(await all_events(forwarding_server, conversation_id))["main-p"]
    assert (call["status"], call["raw_output"], call["title"]) == (status, f"permission: {answer}", "rm -rf build")


async def test_session_mode_is_set_on_the_new_session(forwarding_server: RunningServer, tmp_path: Path) -> None:
    agent = fake_agent(tmp_path, "--modes", session_mode="bypassPermissions")
    conversation_id, _ = await run_to_end(forwarding_server, agent, "mode")
    answers = [e["content"] for e in await all_events(forwarding_server, conversation_id, kind="MessageEvent", source="agent")]
    assert answers == ["mode=bypassPermissions"]


async def test_mode_the_agent_does_not_offer_is_an_agent_error(forwarding_server: RunningServer, tmp_path: Path) -> None:
    agent = fake_agent(tmp_path, "--modes", session_mode="turbo")
    conversation_id, info = await run_to_end(forwarding_server, agent, "mode")
    assert info["status"] == "error"
    error = await agent_error(forwarding_server, conversation_id)
    assert error["code"] == "acp_bad_mode" and "bypassPermissions" in error["error"]
    assert not any(alive(pid) for pid in agent_pids(tmp_path))


async def test_queued_messages_are_prompted_one_after_the_other_in_one_session(
    forwarding_server: RunningServer, tmp_path: Path
) -> None:
    server = forwarding_server
    conversation_id = await start(server, fake_agent(tmp_path), "one", run=False)
    await server.client.post(f"/api/conversations/{conversation_id}/events", json={"content": "two", "run": False})
    assert (await server.client.post(f"/api/conversations/{conversation_id}/run")).status_code == 200
    assert (await wait_for_status(server.client, conversation_id, {"finished", "error"}))["status"] == "finished"
    answers = [e["content"] for e in await all_events(server, conversation_id, kind="MessageEvent", source="agent")]
    assert answers == ["echo: one", "echo: two"]
    (pid,) = agent_pids(tmp_path)
    assert alive(pid)  # kept for the next run

    assert (await server.client.delete(f"/api/conversations/{conversation_id}")).status_code == 204
    assert not alive(pid)
