"""Permission scenarios for tests: scripts whose agents ask, and helpers that speak the domain."""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

from websockets.asyncio.client import ClientConnection, connect

from tests.api.socket_client import socket_url
from tests.servers import RunningServer, wait_for_status
from tests.services import wait_until

WAIT = 60.0
"""Seconds any wait may take: generous, reached only when something is broken."""


def lane(name: str, prompt: str | None, *turns: dict[str, Any]) -> dict[str, Any]:
    """A script lane; ``prompt``: the sub-agent's prompt it matches (``None``: the default lane)."""
    found: dict[str, Any] = {"name": name, "turns": list(turns)}
    if prompt is not None:
        found["match"] = {"first_user_ends_with": prompt}
    return found


def terminal(command: str) -> dict[str, Any]:
    return {"name": "terminal", "arguments": {"command": command}}


def task(description: str, prompt: str, subagent_type: str = "general-purpose") -> dict[str, Any]:
    return {"name": "task", "arguments": {"description": description, "prompt": prompt, "subagent_type": subagent_type}}


def finish(message: str) -> dict[str, Any]:
    return {"name": "finish", "arguments": {"message": message}}


def three_askers_script() -> str:
    """The main agent starts sub-agents A and B in parallel; B runs a terminal call and starts
    C (depth 2) in one response: A, B and C each ask for their ``echo`` at the same time."""
    return json.dumps({"strict": True, "lanes": [
        lane("sub-c", "Work C.", {"tool_calls": [terminal("echo from-c")]}, {"tool_calls": [finish("c done")]}),
        lane("sub-b", "Work B.", {"tool_calls": [terminal("echo from-b"), task("Work C", "Work C.")]},
             {"tool_calls": [finish("b done")]}),
        lane("sub-a", "Work A.", {"tool_calls": [terminal("echo from-a")]}, {"text": "a went on without it"}),
        lane("main", None, {"tool_calls": [task("Work A", "Work A."), task("Work B", "Work B.")]},
             {"tool_calls": [finish("all done")]}),
    ]})


def one_asker_script(command: str = "echo asked", *, after: dict[str, Any] | None = None) -> str:
    """The main agent starts one sub-agent, which asks to run ``command``."""
    return json.dumps({"strict": True, "lanes": [
        lane("sub", "Ask.", {"tool_calls": [terminal(command)]}, after or {"tool_calls": [finish("sub done")]}),
        lane("main", None, {"tool_calls": [task("Ask", "Ask.")]}, {"tool_calls": [finish("main done")]}),
    ]})


async def pending(server: RunningServer, conversation_id: str, **params: Any) -> list[dict[str, Any]]:
    response = await server.client.get(f"/api/conversations/{conversation_id}/permissions", params=params)
    assert response.status_code == 200, response.text
    return response.json()


async def wait_pending(server: RunningServer, conversation_id: str, count: int) -> list[dict[str, Any]]:
    """Wait until exactly ``count`` requests of the tree wait; returns them."""
    found: list[dict[str, Any]] = []

    async def enough() -> bool:
        nonlocal found
        found = await pending(server, conversation_id)
        return len(found) == count

    await wait_until(enough, timeout=WAIT, what=f"{count} pending permission request(s)")
    return found


async def answer(server: RunningServer, conversation_id: str, request_id: str, **body: Any) -> Any:
    return await server.client.post(f"/api/conversations/{conversation_id}/permissions/{request_id}", json=body)


@dataclass
class Frames:
    """Every frame a socket received, in order, while it was read in the background."""

    ws: ClientConnection
    frames: list[dict[str, Any]] = field(default_factory=list)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def events(self) -> list[dict[str, Any]]:
        """The stored events received (``full_state``, deltas and answer frames left out)."""
        return [f for f in self.frames if f.get("seq") is not None]

    async def send(self, frame: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(frame))

    async def wait_for(self, predicate: Any, what: str) -> dict[str, Any]:
        """The first frame (old or new) matching ``predicate``."""
        async with asyncio.timeout(WAIT):
            while True:
                found = next((f for f in self.frames if predicate(f)), None)
                if found is not None:
                    return found
                self._changed.clear()
                try:
                    await self._changed.wait()
                except TimeoutError:
                    raise AssertionError(f"no frame for {what}: {self.frames[-5:]}") from None

    async def _read(self) -> None:
        async for message in self.ws:
            self.frames.append(json.loads(message))
            self._changed.set()


@asynccontextmanager
async def reading(server: RunningServer, conversation_id: str, **params: Any) -> AsyncIterator[Frames]:
    """A socket on the conversation, read in the background into a ``Frames``."""
    keys = server.settings.session_api_keys
    headers = {"X-Session-API-Key": keys[0]} if keys else {}
    async with connect(socket_url(server, conversation_id, **params), additional_headers=headers) as ws:
        frames = Frames(ws)
        reader = asyncio.create_task(frames._read())
        try:
            yield frames
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)


def pending_sets(events: list[dict[str, Any]]) -> list[set[str]]:
    """The request ids of each ``pending_permissions`` state the root's stream stated, in order."""
    return [
        {entry["request_id"] for entry in e["value"]}
        for e in events
        if e["kind"] == "ConversationStateUpdateEvent" and e["key"] == "pending_permissions"
    ]


async def answer_each(server: RunningServer, conversation_id: str, count: int, decide: Any) -> list[dict[str, Any]]:
    """Answer ``count`` requests of the tree as they come (in any order, several may wait at
    once) with ``decide(request)``'s body; returns the requests, in the order answered."""
    answered: list[dict[str, Any]] = []

    async def all_answered() -> bool:
        for request in await pending(server, conversation_id):
            if request["request_id"] not in {r["request_id"] for r in answered}:
                response = await answer(server, conversation_id, request["request_id"], **decide(request))
                assert response.status_code == 200, response.text
                answered.append(request)
        return len(answered) >= count

    await wait_until(all_answered, timeout=WAIT * 3, what=f"{count} permission requests to answer")
    return answered


def by_command(requests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Requests by the word their ``python3 -c 'print(...)'`` command prints."""
    return {r["arguments"]["command"].split('"')[1]: r for r in requests}


async def answer_after_idle_timeout(server: RunningServer, conversation_id: str, others: int) -> str:
    """Let the first request wait past a 0.5 s ``idle_timeout`` (the peer silent all along,
    waiting), then allow it and the ``others`` that follow; the run's final status."""
    [first] = await wait_pending(server, conversation_id, 1)
    await asyncio.sleep(1.5)
    assert (await answer(server, conversation_id, first["request_id"], decision="allow")).status_code == 200
    await answer_each(server, conversation_id, others, lambda request: {"decision": "allow"})
    return (await wait_for_status(server.client, conversation_id, {"finished", "error", "paused"}))["status"]
