"""Webhooks against a real HTTP receiver, forwarded sub-agent events included."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, Response

from taskwire.settings import WebhookSpec
from tests.api.helpers import all_events, create, scripted_agent
from tests.servers import isolated_settings, serve_app, taskwire_server, wait_for_status

REPO = Path(__file__).resolve().parents[2]
TWO = str(REPO / "config/demo/two_subagents.yaml")


def receiver(fail_first: int = 0) -> tuple[FastAPI, list[dict[str, Any]], list[int]]:
    """An app server that files events; it answers 503 to its first ``fail_first`` POSTs."""
    app = FastAPI()
    received: list[dict[str, Any]] = []
    attempts = [0]

    @app.post("/hook")
    async def hook(request: Request) -> Response:
        attempts[0] += 1
        if attempts[0] <= fail_first:
            return Response(status_code=503)
        received.extend(json.loads(await request.body())["events"])
        return Response(status_code=204)

    return app, received, attempts


async def run_demo_with_webhook(tmp_path: Path, fail_first: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int, str]:
    app, received, attempts = receiver(fail_first)
    async with serve_app(app) as hook_url:
        spec = WebhookSpec(url=f"{hook_url}/hook", batch_size=10, flush_interval=0.05, max_retries=5)
        settings = isolated_settings(tmp_path, forward_subagent_events=True, webhooks=[spec])
        async with taskwire_server(settings) as server:
            info = await create(server, agent=scripted_agent(TWO), initial_message="Run the demo.")
            await wait_for_status(server.client, info["id"], {"finished"})
            stored = await all_events(server, info["id"], include_subagents=True)
            for _ in range(200):
                if len(received) >= len(stored):
                    break
                await asyncio.sleep(0.05)
    return received, stored, attempts[0], info["id"]


async def test_webhook_receives_every_event_with_subagent_events_stamped(tmp_path: Path) -> None:
    received, stored, _, root = await run_demo_with_webhook(tmp_path, fail_first=0)
    assert [item["event"]["id"] for item in received] == [e["id"] for e in stored]
    assert {item["conversation_id"] for item in received} == {root}
    stamped = [item["event"] for item in received if "subagent_id" in item["event"]]
    task_calls = {e["tool_call_id"] for e in stored if e["kind"] == "ActionEvent" and e["tool_name"] == "task"}
    assert stamped and {e["parent_tool_use_id"] for e in stamped} == task_calls
    # An app server files them per sub-agent: each sub-stream starts and ends with its lifecycle.
    streams: dict[str, list[str]] = {}
    for event in stamped:
        streams.setdefault(event["subagent_id"], []).append(event["kind"])
    assert len(streams) == 2
    assert all(kinds[0] == "SubagentStartedEvent" and kinds[-1] == "SubagentFinishedEvent" for kinds in streams.values())


async def test_webhook_that_fails_at_first_gets_everything_after_retries(tmp_path: Path) -> None:
    received, stored, attempts, _ = await run_demo_with_webhook(tmp_path, fail_first=2)
    assert attempts > 2
    assert [item["event"]["id"] for item in received] == [e["id"] for e in stored]


async def test_webhook_receiver_that_is_down_never_slows_the_agent(tmp_path: Path) -> None:
    spec = WebhookSpec(url="http://127.0.0.1:9/unreachable", max_retries=1, queue_size=5, flush_interval=0.01)
    settings = isolated_settings(tmp_path, forward_subagent_events=True, webhooks=[spec])
    async with taskwire_server(settings) as server:
        info = await create(server, agent=scripted_agent(TWO), initial_message="Run the demo.")
        done = await wait_for_status(server.client, info["id"], {"finished", "error"}, timeout=30)
        assert done["status"] == "finished"
        status = (await server.client.get("/server_info")).json()["webhooks"][0]
        assert status["dropped"] > 0 and status["delivered"] == 0
