"""Requests first: an agent about to act on a model's answer waits while an API request is
unanswered, at most ``max_wait``; a request counts until it is answered or ``max_hold``; a run
cancelled while its step waits ends cleanly."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from taskwire.runtime.requests_first import RequestsFirst
from tests.api.helpers import all_events, create, scripted_agent
from tests.servers import isolated_settings, taskwire_server, wait_for_status
from tests.services import wait_until

THINK_THEN_FINISH = json.dumps({"lanes": [{"name": "main", "turns": [
    {"tool_calls": [{"name": "think", "arguments": {"thought": "first"}}]},
    {"tool_calls": [{"name": "finish", "arguments": {"message": "done"}}]},
]}]})


async def turns(count: int = 20) -> None:
    """Let the loop run other tasks for a while (no clock involved)."""
    for _ in range(count):
        await asyncio.sleep(0)


async def test_a_step_waits_until_every_request_in_flight_is_answered() -> None:
    gate = RequestsFirst(max_wait=3600, max_hold=3600)
    first, second = gate.arrive(), gate.arrive()
    step = asyncio.ensure_future(gate.step())
    await turns()
    first()
    await turns()
    assert not step.done() and gate.in_flight == 1
    second()
    second()  # a second call does nothing
    await step
    assert gate.in_flight == 0 and gate.waits == 1


async def test_a_step_passes_at_once_when_no_request_is_in_flight() -> None:
    gate = RequestsFirst(max_wait=3600)
    await gate.step()
    assert gate.waits == 0


async def test_a_step_waits_no_longer_than_max_wait_for_a_request_that_is_not_answered() -> None:
    gate = RequestsFirst(max_wait=0.01, max_hold=3600)
    answered = gate.arrive()
    await gate.step()  # returns although the request is still in flight
    assert gate.in_flight == 1
    answered()


async def test_a_request_never_answered_stops_counting_after_max_hold() -> None:
    gate = RequestsFirst(max_wait=3600, max_hold=0.01)
    answered = gate.arrive()
    await gate.step()
    assert gate.in_flight == 0
    answered()  # late: the count stays right
    assert gate.in_flight == 0


async def test_a_step_cancelled_while_it_waits_leaves_the_count_to_the_requests() -> None:
    gate = RequestsFirst(max_wait=3600, max_hold=3600)
    answered = gate.arrive()
    step = asyncio.ensure_future(gate.step())
    await turns()
    step.cancel()
    with pytest.raises(asyncio.CancelledError):
        await step
    assert gate.in_flight == 1
    later = asyncio.ensure_future(gate.step())
    answered()
    await later
    assert gate.in_flight == 0


async def test_the_api_counts_a_request_until_it_is_answered(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        gate = server.runtime.requests_first
        await create(server, agent=scripted_agent(THINK_THEN_FINISH))
        assert (await server.client.get("/api/conversations/count")).status_code == 200
        assert gate.in_flight == 0


async def test_an_agent_acts_on_its_answer_only_once_the_request_in_flight_is_answered(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        gate = server.runtime.requests_first
        gate.max_wait = gate.max_hold = 3600
        held = gate.arrive()  # a request the API has not answered yet
        cid = (await create(server, agent=scripted_agent(THINK_THEN_FINISH), initial_message="Go."))["id"]
        await wait_until(lambda: gate.waits >= 1, timeout=60, what="the agent's step to wait")
        assert [e for e in await all_events(server, cid) if e["kind"] == "ActionEvent"] == []
        held()
        await wait_for_status(server.client, cid, {"finished"})


async def test_a_new_run_asks_its_model_only_once_the_request_in_flight_is_answered(tmp_path: Path) -> None:
    # Its start is a step too: the POST that started it is answered (201, running) first.
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        gate = server.runtime.requests_first
        gate.max_wait = gate.max_hold = 3600
        held = gate.arrive()
        info = await create(server, agent=scripted_agent(THINK_THEN_FINISH), initial_message="Go.")
        assert info["status"] == "running"
        await wait_until(lambda: gate.waits >= 1, timeout=60, what="the run's start to wait")
        assert (await server.client.get(f"/api/conversations/{info['id']}")).json()["usage"]["llm_calls"] == 0
        held()
        done = await wait_for_status(server.client, info["id"], {"finished"})
        assert done["usage"]["llm_calls"] == 2


async def test_a_run_interrupted_while_its_step_waits_ends_paused_with_nothing_left_open(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        gate = server.runtime.requests_first
        gate.max_wait = gate.max_hold = 3600
        held = gate.arrive()
        cid = (await create(server, agent=scripted_agent(THINK_THEN_FINISH), initial_message="Go."))["id"]
        await wait_until(lambda: gate.waits >= 1, timeout=60, what="the agent's step to wait")
        assert (await server.client.post(f"/api/conversations/{cid}/interrupt")).status_code < 300
        await wait_for_status(server.client, cid, {"paused"})
        held()
        await turns()
        events = await all_events(server, cid)
        assert [e for e in events if e["kind"] in ("ActionEvent", "ObservationEvent")] == []
        assert events[-1]["kind"] == "ConversationStateUpdateEvent" and events[-1]["value"] == "paused"
