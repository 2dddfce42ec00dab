"""The AG-UI routes over HTTP: auth, clear 4xx errors, the subscriber limit, and what closing
the stream or interrupting the run does."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from taskwire.stream import CloseCode
from tests.agui.checks import assert_valid
from tests.agui.sse_client import frames_of, read_all, run_input
from tests.api.helpers import all_events, create, scripted_agent
from tests.api.socket_client import open_socket, read_until_closed
from tests.servers import RunningServer, isolated_settings, taskwire_server, wait_for_status

SLOW = str(Path(__file__).parent / "scripts" / "slow_subagents.yaml")
HELLO = "{lanes: [{name: main, turns: [{text: 'Hello.'}]}]}"


def slow_run(thread: str) -> dict[str, Any]:
    return run_input(thread, "run-1", "Go.", forwardedProps={"taskwire": {"agent": scripted_agent(SLOW)}})


def assert_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code and body["detail"], body


@pytest.fixture
async def keyed(tmp_path: Path) -> Any:
    async with taskwire_server(isolated_settings(tmp_path, session_api_keys=["secret"], forward_subagent_events=True)) as running:
        yield running


async def test_both_routes_take_the_session_key_and_the_follow_route_also_a_query_key(keyed: RunningServer) -> None:
    thread = str(uuid.uuid4())
    async with httpx.AsyncClient(base_url=keyed.url) as anonymous:
        assert_error(await anonymous.post("/agui", json=run_input(thread, "r", "hi")), 401, "unauthorized")
        assert_error(await anonymous.get(f"/agui/{thread}"), 401, "unauthorized")
        body = run_input(thread, "r", "hi", forwardedProps={"taskwire": {"agent": scripted_agent(HELLO)}})
        ran = await read_all(anonymous, "POST", "/agui", json=body, headers={"Authorization": "Bearer secret"})
        followed = await read_all(anonymous, "GET", f"/agui/{thread}", params={"until": "idle", "session_api_key": "secret"})
    assert ran[-1][1]["type"] == followed[-1][1]["type"] == "RUN_FINISHED"
    assert await all_events(keyed, thread, body="Hello")


async def test_bad_input_is_a_clear_4xx_and_sends_nothing(keyed: RunningServer) -> None:
    client, thread = keyed.client, str(uuid.uuid4())
    assert_error(await client.post("/agui", content=b"{"), 422, "invalid_run_agent_input")
    assert_error(await client.post("/agui", json={"threadId": thread, "messages": []}), 422, "invalid_run_agent_input")
    assert_error(await client.post("/agui", json=run_input("a/b", "r", "hi")), 422, "invalid_run_agent_input")
    bad_agent = run_input(thread, "r", "hi", forwardedProps={"taskwire": {"agent": {"kind": "nope"}}})
    assert_error(await client.post("/agui", json=bad_agent), 422, "invalid_agent")
    no_user = {"threadId": thread, "runId": "r", "messages": [{"id": "a", "role": "assistant", "content": "x"}]}
    assert_error(await client.post("/agui", json=no_user), 400, "no_user_message")
    resume = run_input(thread, "r", "hi", resume=[{"interruptId": "i-1", "status": "resolved"}])
    assert_error(await client.post("/agui", json=resume), 422, "invalid_resume")
    resume = run_input(thread, "r", "hi", resume=[{"interruptId": "i-1", "status": "cancelled"}])
    assert_error(await client.post("/agui", json=resume), 404, "conversation_not_found")
    assert_error(await client.get(f"/agui/{thread}"), 404, "conversation_not_found")
    assert (await client.get("/api/conversations/count")).json() == 0  # nothing was created

    conversation = (await create(keyed, agent=scripted_agent(HELLO), run=False))["id"]
    assert_error(await client.get(f"/agui/{conversation}", headers={"Last-Event-ID": "x1"}), 400, "invalid_last_event_id")
    assert_error(await client.get(f"/agui/{conversation}", params={"until": "never"}), 422, "invalid_request")


async def test_a_sub_agents_id_is_not_a_thread(keyed: RunningServer) -> None:
    thread = str(uuid.uuid4())
    await read_all(keyed.client, "POST", "/agui", json=slow_run(thread))
    subagent = (await keyed.client.get(f"/api/conversations/{thread}/subagents")).json()[0]["subagent_id"]
    assert_error(await keyed.client.post("/agui", json=run_input(subagent, "r", "hi")), 400, "subagent_conversation")
    assert_error(await keyed.client.get(f"/agui/{subagent}"), 400, "subagent_conversation")


async def test_a_known_thread_runs_again_and_its_stream_holds_only_the_new_run(tmp_path: Path) -> None:
    script = "{lanes: [{name: main, turns: [{text: 'One.'}, {text: 'Two.'}]}]}"
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        thread = str(uuid.uuid4())
        first = await read_all(server.client, "POST", "/agui",
                               json=run_input(thread, "run-1", "1", forwardedProps={"taskwire": {"agent": scripted_agent(script)}}))
        second = await read_all(server.client, "POST", "/agui", json=run_input(thread, "run-2", "2"))
    for frames, run_id, answer in ((first, "run-1", "One."), (second, "run-2", "Two.")):
        sent = [e for _, e in frames]
        assert_valid(sent)
        assert (sent[0]["runId"], sent[-1]["runId"], sent[-1]["result"]) == (run_id, run_id, answer)
        assert [e["role"] for e in sent if e["type"] == "TEXT_MESSAGE_START"] == ["assistant"]  # no echo of ours
    assert second[0][0] >= first[-1][0]  # the second stream starts where the first ended


async def test_sse_streams_count_against_the_subscriber_limit_with_sockets(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path, max_subscribers=1)) as server:
        conversation = (await create(server, agent=scripted_agent(HELLO), run=False))["id"]
        async with server.client.stream("GET", f"/agui/{conversation}") as following:
            assert following.status_code == 200
            refused = await server.client.post("/agui", json=run_input(conversation, "r", "Not sent."))
            assert_error(refused, 503, "too_many_subscribers")
            assert refused.headers["Retry-After"] == "1"
            async with open_socket(server, conversation) as ws:
                assert (await read_until_closed(ws)).code == CloseCode.TOO_MANY_SUBSCRIBERS
        assert await all_events(server, conversation, body="Not sent.") == []
        # The place is free again once the stream is closed.
        await wait_until_free(server)
        frames = await read_all(server.client, "POST", "/agui", json=run_input(conversation, "r", "Now."))
        assert frames[-1][1]["type"] == "RUN_FINISHED"


async def wait_until_free(server: RunningServer) -> None:
    limit = server.app.state.subscriber_limit
    for _ in range(500):
        if limit.active == 0:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the closed stream still holds its place")


async def test_closing_the_stream_ends_only_the_stream_the_run_goes_on(keyed: RunningServer) -> None:
    thread = str(uuid.uuid4())
    async with keyed.client.stream("POST", "/agui", json=slow_run(thread)) as response:
        async for _, event in frames_of(response):
            assert event["type"] == "RUN_STARTED"
            break  # HttpAgent.abortRun() does this: it aborts the request
    info = await wait_for_status(keyed.client, thread, {"finished"})
    assert info["status"] == "finished"
    await wait_until_free(keyed)


async def test_an_interrupt_ends_the_run_as_cancelled_with_its_sub_agents(keyed: RunningServer) -> None:
    thread = str(uuid.uuid4())
    sent: list[dict[str, Any]] = []
    async with keyed.client.stream("POST", "/agui", json=slow_run(thread)) as response:
        async for _, event in frames_of(response):
            sent.append(event)
            # Both sub-agents running: they wait for their (slow) model when the interrupt lands.
            running = [e for e in sent if e.get("name") == "taskwire.status" and "subagentRunId" in e and e["value"] == "running"]
            if event in running and len(running) == 2:
                assert (await keyed.client.post(f"/api/conversations/{thread}/interrupt")).status_code == 200
    assert_valid(sent)
    assert sent[-1]["type"] == "RUN_FINISHED" and sent[-1]["outcome"] == {"type": "cancelled"}
    ended = [e for e in sent if e["type"] == "SUBAGENT_ERROR"]
    assert len(ended) == 2 and {e["code"] for e in ended} == {"cancelled"}
