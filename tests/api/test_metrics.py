"""``GET /metrics``: Prometheus text that agrees with what REST says about the same runs."""

from __future__ import annotations

import asyncio

from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from taskwire.stream import CloseCode
from tests.agui.sse_client import frames_of
from tests.api.socket_client import next_frame, open_socket, produce, read_until_closed
from tests.servers import RunningServer, isolated_settings, taskwire_server
from tests.telemetry.runs import native_agent, run_to_end, subagents


async def scrape(server: RunningServer, **headers: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``/metrics``, by name and labels."""
    response = await server.client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def total(samples: dict[tuple[str, Any], float], name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    return sum(v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls))


async def count(server: RunningServer, conversation_id: str, **params: str) -> int:
    response = await server.client.get(f"/api/conversations/{conversation_id}/events/count", params=params)
    assert response.status_code == 200, response.text
    return int(response.json())


async def test_counters_after_a_run_match_rest(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
        conversation_id = await run_to_end(server.client, native_agent())
        samples = await scrape(server)
        tree = await count(server, conversation_id, include_subagents="true")
        assert total(samples, "taskwire_events_appended_total") == tree
        for kind in ("ActionEvent", "ObservationEvent", "SubagentStartedEvent", "ConversationStateUpdateEvent"):
            appended = total(samples, "taskwire_events_appended_total", kind=kind)
            assert appended == await count(server, conversation_id, include_subagents="true", kind=kind), kind
        assert total(samples, "taskwire_events_forwarded_total") == tree - await count(server, conversation_id)
        assert total(samples, "taskwire_store_append_seconds_count") == tree
        assert total(samples, "taskwire_store_append_seconds_bucket", le="+Inf") == tree

        finished = (await server.client.get("/api/conversations/count", params={"status": "finished"})).json()
        assert total(samples, "taskwire_runs_total", status="finished") == finished == 1
        assert total(samples, "taskwire_runs_total") == 1 and total(samples, "taskwire_runs_running") == 0
        entries = await subagents(server.client, conversation_id)
        assert total(samples, "taskwire_subagents_total", status="completed") == len(entries) == 3
        assert total(samples, "taskwire_subagents_running") == 0

        info = (await server.client.get(f"/api/conversations/{conversation_id}")).json()
        usages = [info["usage"], *(entry["usage"] for entry in entries)]
        assert total(samples, "taskwire_llm_requests_total", model="scripted") == sum(u["llm_calls"] for u in usages)
        for kind, field in (("input", "input_tokens"), ("output", "output_tokens")):
            assert total(samples, "taskwire_llm_tokens_total", model="scripted", type=kind) == sum(u[field] for u in usages)
        # A finished native root holds nothing and leaves memory just after its run ends.
        assert await loaded_settles_at(server, 0)
        assert total(samples, "taskwire_tracing_enabled") == 0


async def loaded_settles_at(server: RunningServer, expected: int) -> bool:
    """Wait (up to a minute) for the loaded-conversations gauge to read ``expected``."""
    for _ in range(600):
        if total(await scrape(server), "taskwire_conversations_loaded") == expected:
            return True
        await asyncio.sleep(0.1)
    return False


async def test_sub_agent_events_are_counted_whatever_the_flag_says(server: RunningServer) -> None:
    conversation_id = await run_to_end(server.client, native_agent())  # forwarding off
    samples = await scrape(server)
    assert total(samples, "taskwire_events_appended_total") == await count(server, conversation_id, include_subagents="true")
    assert total(samples, "taskwire_events_forwarded_total") == 0
    assert total(samples, "taskwire_subagents_total") == 3


async def test_the_event_loop_lag_is_measured_inside_the_server(server: RunningServer) -> None:
    await run_to_end(server.client, native_agent())
    samples = await scrape(server)
    assert total(samples, "taskwire_event_loop_lag_max_seconds") >= 0
    assert total(samples, "taskwire_event_loop_lag_seconds_bucket", le="+Inf") == total(samples, "taskwire_event_loop_lag_seconds_count")


async def test_metrics_need_the_api_key_when_keys_are_set(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, session_api_keys=["k1"])) as server:
        assert (await server.client.get("/metrics", headers={"X-Session-API-Key": "wrong"})).status_code == 401
        server.client.headers.pop("X-Session-API-Key")
        refused = await server.client.get("/metrics")
        assert refused.status_code == 401 and refused.json()["code"] == "unauthorized"
        samples = await scrape(server, Authorization="Bearer k1")  # as Prometheus sends a key
        assert ("taskwire_runs_running", ()) in samples


async def test_each_server_in_a_process_keeps_its_own_metrics(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    async with taskwire_server(isolated_settings(tmp_path / "a")) as busy, taskwire_server(isolated_settings(tmp_path / "b")) as idle:
        await run_to_end(busy.client, native_agent())
        assert total(await scrape(busy), "taskwire_runs_total") == 1
        assert total(await scrape(idle), "taskwire_events_appended_total") == 0


async def test_a_client_closed_as_too_slow_is_counted(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, ws_queue_size=8)) as server:
        conversation_id = (await server.client.post("/api/conversations", json={"agent": {"kind": "native"}, "run": False})).json()["id"]
        async with open_socket(server, conversation_id, max_queue=4, compress=False) as ws:
            await next_frame(ws)  # then read nothing
            assert total(await scrape(server), "taskwire_subscribers") == 1
            subscription = server.app.state.bus.subscriptions(conversation_id)[0]
            while not subscription.overflowed:
                await produce(server, conversation_id, 50, noise=32_000)
            closed = await read_until_closed(ws)
        assert closed.code == CloseCode.TOO_SLOW
        samples = await scrape(server)
        assert total(samples, "taskwire_subscribers_closed_total", reason="too_slow") == 1
        assert total(samples, "taskwire_subscribers") == 0


async def test_an_sse_client_closed_as_too_slow_is_counted_too(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, ws_queue_size=8)) as server:
        conversation_id = (await server.client.post("/api/conversations", json={"agent": {"kind": "native"}, "run": False})).json()["id"]
        async with server.client.stream("GET", f"/agui/{conversation_id}") as response:
            frames = frames_of(response)
            await anext(frames)  # then read nothing
            subscription = server.app.state.bus.subscriptions(conversation_id)[0]
            while not subscription.overflowed:
                await produce(server, conversation_id, 50, noise=32_000)
            last = [frame async for frame in frames][-1][1]
        assert last["name"] == "taskwire.stream_closed" and last["value"]["code"] == "too_slow"
        assert total(await scrape(server), "taskwire_subscribers_closed_total", reason="too_slow") == 1


async def test_queue_depth_counts_what_subscribers_have_not_taken(server: RunningServer) -> None:
    conversation_id = (await server.client.post("/api/conversations", json={"agent": {"kind": "native"}, "run": False})).json()["id"]
    async with server.app.state.bus.subscribe(conversation_id, maxsize=100), server.app.state.bus.subscribe(conversation_id, maxsize=100) as reader:
        await produce(server, conversation_id, 6)
        for _ in range(2):
            await reader.get()
        samples = await scrape(server)
    assert total(samples, "taskwire_subscriber_queued_events") == 6 + 4
    assert total(samples, "taskwire_subscriber_queue_depth_max") == 6
