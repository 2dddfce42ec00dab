"""A tree of native agents whose model answers over HTTP as real providers do: resets, stalls,
broken streams, 429s and 5xx are retried where they happen (the main agent, a sub-agent at
depth 2), each retry an event in that agent's own stream; a pause, an interrupt or a sub-agent
cancel during a back-off takes effect; a final error fails at once; retries that run out end a
sub-agent in error and its parent goes on."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import pytest

from taskwire.llm.mock_server import create_mock_app
from tests.api.helpers import all_events, create
from tests.api.test_metrics import scrape, total
from tests.api.test_forwarding import watch_run
from tests.reliability.consistency import assert_consistent
from tests.servers import RunningServer, isolated_settings, serve_app, taskwire_server, wait_for_status
from tests.services import wait_until
from tests.stream.checks import assert_gapless

FAULTS: dict[str, dict[str, Any]] = {
    "reset": {"fault": "reset"},
    "stall": {"fault": "stall"},
    "cut": {"fault": "cut"},
    "503": {"error": "busy", "status": 503},
    "429": {"error": "rate limited", "status": 429, "retry_after": 0.5},
}
STREAMS_TEXT = {"stall", "cut"}
"""Faults whose failed attempt streamed some of the answer's text."""


def tree_script(ran: Path, *, main: dict[str, Any] | None = None, deepest: dict[str, Any] | None = None,
                level1: dict[str, Any] | None = None) -> dict[str, Any]:
    """Main → level 1 → level 2, which runs one command (appending to ``ran``): the first turn
    of ``main``, ``level1`` or ``deepest`` gets the given failure fields."""
    def call(name: str, **arguments: Any) -> dict[str, Any]:
        return {"name": name, "arguments": arguments}

    def task(level: int) -> dict[str, Any]:
        return call("task", description=f"Level {level}", prompt=f"Level {level} work.", subagent_type="general-purpose")

    def first(text: str, tool: dict[str, Any], failure: dict[str, Any] | None) -> dict[str, Any]:
        return {"text": text, "tool_calls": [tool], **(failure or {})}

    return {"lanes": [
        {"name": "level2", "match": {"first_user_ends_with": "Level 2 work."}, "turns": [
            first("Running the command now, as asked.", call("terminal", command=f"echo ran >> {ran}"), deepest),
            {"tool_calls": [call("finish", message="level 2 done")]}]},
        {"name": "level1", "match": {"first_user_ends_with": "Level 1 work."}, "turns": [
            first("Handing this to level two.", task(2), level1),
            {"tool_calls": [call("finish", message="level 1 done")]}]},
        {"name": "main", "turns": [
            first("Delegating the work to level one.", task(1), main),
            {"tool_calls": [call("finish", message="all levels done")]}]},
    ]}


@asynccontextmanager
async def tree_server(tmp_path: Path, script: dict[str, Any], dialect: str = "anthropic",
                      **llm: Any) -> AsyncIterator[tuple[RunningServer, dict[str, Any], Path]]:
    """A mock provider serving ``script``, a taskwire server with forwarding on, and the agent
    spec that calls the provider (``llm`` adds to its ``llm``)."""
    log = tmp_path / "requests.jsonl"
    async with serve_app(create_mock_app(script, log_path=log)) as mock_url:
        settings = isolated_settings(tmp_path, forward_subagent_events=True)
        async with taskwire_server(settings) as server:
            base_url = f"{mock_url}/v1" if dialect == "openai" else mock_url
            spec = {"api": dialect, "model": "m", "base_url": base_url, "api_key": "k", "stall_timeout": 0.5, **llm}
            yield server, {"kind": "native", "llm": spec}, log


def logged(log: Path) -> list[dict[str, Any]]:
    """The provider's request log so far (none yet: no file)."""
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def retries(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == "LLMRetryEvent"]


async def deepest_subagent(server: RunningServer, cid: str) -> dict[str, Any]:
    tree = (await server.client.get(f"/api/conversations/{cid}/subagents")).json()
    return next(s for s in tree if s.get("parent_subagent_id"))


@pytest.mark.parametrize("where", ["main", "deepest"])
@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_a_fault_is_retried_where_it_happens_and_the_tree_finishes(
    fault: str, where: str, tmp_path: Path
) -> None:
    ran = tmp_path / "ran.txt"
    script = tree_script(ran, **{where: {**FAULTS[fault], "fail_times": 1}})
    async with tree_server(tmp_path, script) as (server, agent, log):
        cid, frames = await watch_run(server, agent)
        info = await assert_consistent(server, cid)
        stored = await all_events(server, cid, include_subagents="true")
        deepest = await deepest_subagent(server, cid)
    assert info["status"] == "finished"
    assert_gapless(frames, [e["seq"] for e in stored])
    assert ran.read_text() == "ran\n"  # the command the faulted answer asked for ran once
    [retry] = retries(stored)
    if where == "main":
        assert "subagent_id" not in retry and "parent_tool_use_id" not in retry
    else:
        assert (retry["subagent_id"], retry["parent_tool_use_id"]) == (deepest["subagent_id"], deepest["parent_tool_use_id"])
    assert (retry["attempt"], retry["max_attempts"], retry["reason"]) == (2, 7, {
        "reset": "connection", "stall": "stalled", "cut": "broken_stream"}.get(fault, fault))
    assert retry.get("discard_text", False) == (fault in STREAMS_TEXT)
    assert [f["id"] for f in retries(frames)] == [retry["id"]]  # forwarded live like the rest
    # Every answer acted on once: one ActionEvent per scripted call, in every stream.
    actions = [e["tool_call_id"] for e in stored if e["kind"] == "ActionEvent"]
    assert len(actions) == len(set(actions)) == 6
    requests = logged(log)
    assert len(requests) == 7  # six turns, one of them twice


async def test_retry_after_from_a_subagents_provider_is_waited_out(tmp_path: Path) -> None:
    ran = tmp_path / "ran.txt"
    script = tree_script(ran, deepest={"error": "slow down", "status": 429, "retry_after": 2, "fail_times": 1})
    async with tree_server(tmp_path, script, dialect="openai") as (server, agent, log):
        cid, _ = await watch_run(server, agent)
        stored = await all_events(server, cid, include_subagents="true")
        samples = await scrape(server)
    assert total(samples, "taskwire_llm_retries_total", reason="429") == 1
    assert total(samples, "taskwire_llm_retries_total") == 1
    [retry] = retries(stored)
    assert (retry["reason"], retry["status_code"], retry["delay"]) == ("429", 429, 2)
    refused, again = [r for r in logged(log) if r["lane"] == "level2" and r["turn"] == 0]
    assert refused["status"] == 429 and again["status"] == 200
    assert again["at"] - refused["at"] >= 2.0


async def test_an_interrupt_during_a_long_back_off_ends_the_run_paused(tmp_path: Path) -> None:
    script = tree_script(tmp_path / "ran.txt", main={"error": "rate limited", "status": 429, "retry_after": 30})
    async with tree_server(tmp_path, script) as (server, agent, log):
        info = await create(server, agent=agent, initial_message="Go.")
        cid = info["id"]

        async def backing_off() -> bool:
            return bool(retries(await all_events(server, cid)))

        await wait_until(backing_off, timeout=60, what="the retry event")
        assert (await server.client.post(f"/api/conversations/{cid}/interrupt")).status_code == 200
        done = await wait_for_status(server.client, cid, {"paused", "finished", "error"})
        await assert_consistent(server, cid)
        assert len(logged(log)) == 1  # nothing was asked again
    assert done["status"] == "paused"


async def test_a_pause_during_a_back_off_ends_the_run_paused(tmp_path: Path) -> None:
    script = tree_script(tmp_path / "ran.txt", main={"error": "rate limited", "status": 429, "retry_after": 30})
    async with tree_server(tmp_path, script) as (server, agent, log):
        cid = (await create(server, agent=agent, initial_message="Go."))["id"]

        async def backing_off() -> bool:
            return bool(retries(await all_events(server, cid)))

        await wait_until(backing_off, timeout=60, what="the retry event")
        assert (await server.client.post(f"/api/conversations/{cid}/pause")).status_code == 200
        done = await wait_for_status(server.client, cid, {"paused", "finished", "error"})
        await assert_consistent(server, cid)
        assert len(logged(log)) == 1
    assert done["status"] == "paused"


async def test_a_pause_during_a_stalled_stream_ends_the_run_paused_without_another_attempt(tmp_path: Path) -> None:
    script = tree_script(tmp_path / "ran.txt", main={"fault": "stall"})
    async with tree_server(tmp_path, script, stall_timeout=3) as (server, agent, log):
        cid = (await create(server, agent=agent, initial_message="Go."))["id"]
        await wait_until(lambda: len(logged(log)) == 1, timeout=60, what="the stalled request")
        assert (await server.client.post(f"/api/conversations/{cid}/pause")).status_code == 200
        done = await wait_for_status(server.client, cid, {"paused", "finished", "error"})
        await assert_consistent(server, cid)
        stored = await all_events(server, cid)
        requests = logged(log)
    assert done["status"] == "paused"
    # The stall is abandoned as it would be anyway; the retry it reports is never made.
    assert len(requests) == len(retries(stored)) == 1


async def test_cancelling_a_subagent_in_its_back_off_lets_the_parent_go_on(tmp_path: Path) -> None:
    script = tree_script(tmp_path / "ran.txt", level1={"error": "overloaded", "status": 529, "retry_after": 30})
    async with tree_server(tmp_path, script) as (server, agent, _):
        cid = (await create(server, agent=agent, initial_message="Go."))["id"]

        async def subagent_backing_off() -> bool:
            return any("subagent_id" in e for e in retries(await all_events(server, cid, include_subagents="true")))

        await wait_until(subagent_backing_off, timeout=60, what="the sub-agent's retry event")
        [child] = (await server.client.get(f"/api/conversations/{cid}/subagents")).json()
        cancel = await server.client.post(f"/api/conversations/{cid}/subagents/{child['subagent_id']}/cancel")
        assert cancel.status_code == 202, cancel.text
        done = await wait_for_status(server.client, cid, {"paused", "finished", "error"})
        await assert_consistent(server, cid)
        stored = await all_events(server, cid)
    assert done["status"] == "finished"
    [result] = [e for e in stored if e["kind"] == "ObservationEvent" and e["tool_name"] == "task"]
    assert "was cancelled" in result["content"]


async def test_a_401_fails_the_run_at_once_with_the_providers_message(tmp_path: Path) -> None:
    script = tree_script(tmp_path / "ran.txt", main={"error": "invalid x-api-key", "status": 401})
    async with tree_server(tmp_path, script) as (server, agent, log):
        cid = (await create(server, agent=agent, initial_message="Go."))["id"]
        done = await wait_for_status(server.client, cid, {"paused", "finished", "error"})
        stored = await all_events(server, cid)
        assert len(logged(log)) == 1
    assert done["status"] == "error"
    [error] = [e for e in stored if e["kind"] == "AgentErrorEvent"]
    assert "HTTP 401" in error["error"] and "invalid x-api-key" in error["error"]
    assert retries(stored) == []


async def test_a_subagent_whose_retries_run_out_fails_and_its_parent_is_told_why(tmp_path: Path) -> None:
    script = tree_script(tmp_path / "ran.txt", level1={"error": "down for maintenance", "status": 503})
    async with tree_server(tmp_path, script, max_retries=1) as (server, agent, log):
        cid, _ = await watch_run(server, agent)
        info = await assert_consistent(server, cid)
        stored = await all_events(server, cid, include_subagents="true")
    assert info["status"] == "finished"
    [result] = [e for e in stored if e["kind"] == "ObservationEvent" and e["tool_name"] == "task" and "subagent_id" not in e]
    assert result["is_error"]
    assert "down for maintenance" in result["content"] and "gave up after 2 attempts" in result["content"]
    [finished] = [e for e in stored if e["kind"] == "SubagentFinishedEvent"]
    assert finished["status"] == "error"
    assert len(retries(stored)) == 1


async def test_two_servers_in_one_process_keep_their_rate_limits_apart(tmp_path: Path) -> None:
    # One provider, two servers: the first's agent is told to wait 30 s; the second's does not
    # wait for it (the gate is the server's, never the process's).
    script = {"lanes": [
        {"name": "told", "match": {"first_user_contains": "first server"},
         "turns": [{"error": "rate limited", "status": 429, "retry_after": 30}]},
        {"name": "free", "match": {"first_user_contains": "second server"},
         "turns": [{"tool_calls": [{"name": "finish", "arguments": {"message": "done"}}]}]},
    ]}
    log = tmp_path / "requests.jsonl"
    async with serve_app(create_mock_app(script, log_path=log)) as mock_url:
        agent = {"kind": "native", "llm": {"api": "anthropic", "model": "m", "base_url": mock_url, "api_key": "k"}}
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        async with taskwire_server(isolated_settings(tmp_path / "a")) as first, \
                taskwire_server(isolated_settings(tmp_path / "b")) as second:
            waiting = (await create(first, agent=agent, initial_message="Go, first server."))["id"]

            async def told_to_wait() -> bool:
                return bool(retries(await all_events(first, waiting)))

            await wait_until(told_to_wait, timeout=60, what="the first server's retry event")
            other = (await create(second, agent=agent, initial_message="Go, second server."))["id"]
            done = await wait_for_status(second.client, other, {"paused", "finished", "error"})
            assert first.runtime.llm_gates is not second.runtime.llm_gates
            status = (await first.client.get(f"/api/conversations/{waiting}")).json()["status"]
            await first.client.post(f"/api/conversations/{waiting}/interrupt")
    assert done["status"] == "finished" and status == "running"
    assert [(r["lane"], r["status"]) for r in logged(log)] == [("told", 429), ("free", 200)]


@pytest.mark.parametrize("field, value", [
    ("max_retries", -1), ("max_retries", 101), ("retry_max_seconds", 0), ("stall_timeout", 0), ("max_concurrency", 0),
    ("max_retries", "3"), ("stall_timeout", True), ("max_retries", 2.5), ("max_concurrency", 1.5),
])
async def test_a_retry_setting_out_of_range_is_a_422_naming_it(field: str, value: Any, tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        agent = {"kind": "native", "llm": {"api": "openai", "model": "m", field: value}}
        response = await server.client.post("/api/conversations", json={"agent": agent, "initial_message": "Go."})
    assert response.status_code == 422, response.text
    assert field in response.text


async def test_whole_numbers_written_as_floats_are_taken(tmp_path: Path) -> None:
    # JSON Schema counts 37.0 as an integer (Schemathesis sent one): the settings take it as 37.
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        llm = {"api": "openai", "model": "m", "max_retries": 37.0, "max_concurrency": 2.0, "stall_timeout": 5,
               "retry_max_seconds": 60}
        response = await server.client.post("/api/conversations", json={
            "agent": {"kind": "native", "llm": llm}, "initial_message": "Go.", "run": False})
        assert response.status_code == 201, response.text
        stored = (await server.client.get(f"/api/conversations/{response.json()['id']}")).json()["agent"]["llm"]
    assert (stored["max_retries"], stored["max_concurrency"]) == (37, 2)
    assert isinstance(stored["max_retries"], int) and isinstance(stored["max_concurrency"], int)
