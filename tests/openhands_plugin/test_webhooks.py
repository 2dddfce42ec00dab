"""The agent-server's webhook subscribers receive the stamped sub-agent events too, so an app
server files them on a per-sub-agent sub-stream, each under the ``task`` call that spawned it."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.openhands_plugin.agent_server import agent_server, everything, run_watched, stamped, start_conversation
from tests.openhands_plugin.helpers import CRITIC_PLUGIN, INNER_CALL, TREE_CALLS, mock_llm, workspace_with_agents
from tests.servers import serve_app
from tests.services import wait_until


class AppServer:
    """An app server's webhook receiver: the parent's events in one stream, each sub-agent's in
    a sub-stream of its own under the call that spawned it (the consumer rule)."""

    def __init__(self) -> None:
        self.parent: list[dict[str, Any]] = []
        self.substreams: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        self.app = Starlette(routes=[Route("/events/{conversation}", self.events, methods=["POST"]),
                                     Route("/conversations", self.conversations, methods=["POST"])])

    async def events(self, request: Request) -> JSONResponse:
        for event in await request.json():
            if event.get("parent_tool_use_id"):
                self.substreams[(event["parent_tool_use_id"], event["subagent_id"])].append(event)
            else:
                self.parent.append(event)
        return JSONResponse({})

    async def conversations(self, request: Request) -> JSONResponse:
        return JSONResponse({})

    def ids(self) -> set[str]:
        return {e["id"] for events in self.substreams.values() for e in events}


def without_nulls(event: dict[str, Any]) -> dict[str, Any]:
    """Webhooks post ``model_dump(mode="json")``, the socket drops ``None`` fields."""
    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if v is not None}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value
    return clean(event)


async def test_webhook_subscribers_receive_the_stamped_subagent_events(tmp_path: Path) -> None:
    receiver = AppServer()
    async with serve_app(receiver.app) as hook_url, mock_llm(tmp_path, "tree") as llm:
        config = {"webhooks": [{"base_url": hook_url, "event_buffer_size": 1, "flush_delay": 0.2, "num_retries": 0}]}
        async with agent_server(tmp_path / "server", config=config) as server:
            conversation = await start_conversation(server, llm.url, workspace_with_agents(tmp_path / "ws"),
                                                    concurrency=3, plugins=[{"source": str(CRITIC_PLUGIN)}])
            frames = await run_watched(server, conversation)
            sub = stamped(frames)
            await wait_until(lambda: receiver.ids() >= {f["id"] for f in sub}, timeout=60,
                             what="the webhook to receive every sub-agent event")
            parent = await everything(server, f"/api/conversations/{conversation}/events/search")

    assert {call for call, _ in receiver.substreams} == {*TREE_CALLS, INNER_CALL}
    for (call, subagent), events in receiver.substreams.items():
        socket_side = [f for f in sub if f["parent_tool_use_id"] == call]
        assert {f["subagent_id"] for f in socket_side} == {subagent}
        assert [without_nulls(e) for e in events] == socket_side  # in order, as the socket showed them
    # The parent's stream holds its own events only.
    assert not {e["id"] for e in receiver.parent} & receiver.ids()
    assert {e["id"] for e in parent} <= {e["id"] for e in receiver.parent}
