"""The client both agent servers get for the tree workload: start a tree and watch it live, drop
and reconnect, find a call's sub-agent events over REST.

taskwire: ``POST /api/conversations`` (runs at once), then its socket (``resend_mode=all``, so
nothing is missed between the 201 and the socket), sub-agent events forwarded and stamped.
LangGraph: ``POST /threads``, then ``POST /threads/{id}/runs/stream`` (v1: the run and its
stream in one request, ``stream_subgraphs`` and ``stream_resumable`` on, modes
``messages-tuple``, ``tasks``, ``updates``), or v2: ``POST /threads/{id}/stream/events`` opened
and then ``run.start`` over ``/commands``. The clock starts before the first request either way.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import websockets

import trees

V1_MODES = ["messages-tuple", "tasks", "updates"]
V2_CHANNELS = ["lifecycle", "messages", "tools"]
QUIET = 1.5  # seconds without a frame after which a replay is taken as complete


@dataclass
class Tree:
    """One tree as its client saw it: seconds from the first request, and what arrived."""

    first_subagent: float = 0.0
    end: float = 0.0
    events: list[Any] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)
    """The server's ids of it: ``conversation``, or ``thread`` and ``run``."""


async def sse(response: httpx.Response) -> AsyncIterator[tuple[str, Any, str | None]]:
    """(event name, decoded data, id) of each server-sent event of a streamed response."""
    name, data, event_id = "message", [], None
    async for line in response.aiter_lines():
        if not line:
            if data:
                text = "\n".join(data)
                try:
                    decoded = json.loads(text)
                except ValueError:
                    decoded = text
                yield name, decoded, event_id
            name, data, event_id = "message", [], None
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif line.startswith("id:"):
            event_id = line[3:].strip()


# -- taskwire --------------------------------------------------------------------------------


def taskwire_agent(model_url: str) -> dict[str, Any]:
    return {"kind": "native", "llm": {"api": "openai", "model": "mock", "base_url": model_url, "api_key": "sk-unused"},
            "tools": ["task", "think", "finish"], "max_iterations": 1000}


def _ends_root(event: dict[str, Any]) -> bool:
    return (event.get("key") == "status" and event.get("value") in ("finished", "error")
            and not event.get("subagent_id"))


async def taskwire_tree(client: httpx.AsyncClient, ws_base: str, model_url: str) -> Tree:
    tree = Tree()
    began = time.perf_counter()
    response = await client.post("/api/conversations", json={"agent": taskwire_agent(model_url),
                                                             "initial_message": trees.ROOT_PROMPT, "run": True})
    response.raise_for_status()
    tree.ids["conversation"] = conversation = response.json()["id"]
    # A generous open timeout: a soak runs on a machine other work may load for minutes.
    async with websockets.connect(f"{ws_base}/sockets/events/{conversation}?resend_mode=all", max_size=None,
                                  compression=None, ping_interval=None, open_timeout=60) as socket:
        async for frame in socket:
            event = json.loads(frame)
            tree.events.append(event)
            if event.get("subagent_id") and not tree.first_subagent:
                tree.first_subagent = time.perf_counter() - began
            if _ends_root(event):
                break
    tree.end = time.perf_counter() - began
    return tree


async def taskwire_stored(ws_base: str, conversation: str, after: int = 0) -> list[dict[str, Any]]:
    """The tree's stored events after ``after`` (a replay: read until the socket is quiet)."""
    got = []
    async with websockets.connect(f"{ws_base}/sockets/events/{conversation}?resend_mode=since&after_seq={after}",
                                  max_size=None, compression=None, ping_interval=None) as socket:
        try:
            while True:
                event = json.loads(await asyncio.wait_for(socket.recv(), QUIET))
                if event.get("seq") is not None:
                    got.append(event)
        except TimeoutError:
            pass
    return got


async def taskwire_dropping(client: httpx.AsyncClient, ws_base: str, model_url: str, points: list[int]) -> dict[str, int]:
    """A tree watched by a client that drops its socket after each of ``points`` events and
    reconnects with ``after_seq`` = the last ``seq`` it got; then compared with the stored log."""
    response = await client.post("/api/conversations", json={"agent": taskwire_agent(model_url),
                                                             "initial_message": trees.ROOT_PROMPT, "run": True})
    response.raise_for_status()
    conversation = response.json()["id"]
    received: list[int] = []
    last, todo, done = 0, list(points), False
    while not done:
        mode = f"resend_mode=since&after_seq={last}" if received else "resend_mode=all"
        async with websockets.connect(f"{ws_base}/sockets/events/{conversation}?{mode}", max_size=None,
                                      compression=None, ping_interval=None) as socket:
            async for frame in socket:
                event = json.loads(frame)
                if event.get("seq") is not None:
                    received.append(event["seq"])
                    last = event["seq"]
                if _ends_root(event):
                    done = True
                    break
                if todo and len(received) >= todo[0]:
                    todo.pop(0)
                    break  # the drop
    stored = [e["seq"] for e in await taskwire_stored(ws_base, conversation)]
    return {**trees.compare(stored, received), "reconnects": len(points) - len(todo)}


# -- LangGraph -------------------------------------------------------------------------------


def _input() -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": trees.ROOT_PROMPT}]}


async def langgraph_tree(client: httpx.AsyncClient) -> Tree:
    """A tree over v1: ``runs/stream`` with subgraphs, resumable."""
    tree = Tree()
    began = time.perf_counter()
    thread = (await client.post("/threads", json={})).raise_for_status().json()["thread_id"]
    tree.ids["thread"] = thread
    body = {"assistant_id": "agent", "input": _input(), "stream_mode": V1_MODES, "stream_subgraphs": True,
            "stream_resumable": True}
    async with client.stream("POST", f"/threads/{thread}/runs/stream", json=body) as response:
        response.raise_for_status()
        async for name, data, event_id in sse(response):
            tree.events.append((name, data, event_id))
            if name == "metadata" and isinstance(data, dict):
                tree.ids["run"] = data.get("run_id", "")
            if "|tools:" in name and not tree.first_subagent:
                tree.first_subagent = time.perf_counter() - began
    tree.end = time.perf_counter() - began
    return tree


async def v1_join(client: httpx.AsyncClient, thread: str, run: str, last_event_id: str | None) -> list[tuple[str, Any, str | None]]:
    """The run's stream joined with ``Last-Event-ID`` (modes as a JSON array: the SDK's repeated
    query parameters keep only the last mode)."""
    headers = {"Last-Event-ID": last_event_id} if last_event_id is not None else {}
    params = {"stream_mode": json.dumps(V1_MODES), "stream_subgraphs": "true"}
    got = []
    async with client.stream("GET", f"/threads/{thread}/runs/{run}/stream", params=params, headers=headers) as response:
        response.raise_for_status()
        async for event in sse(response):
            got.append(event)
    return got


async def v1_dropping(client: httpx.AsyncClient, points: list[int]) -> dict[str, int]:
    """A v1 client that drops after each of ``points`` events and rejoins with the last id it
    got; then compared with the whole run replayed (``Last-Event-ID: 0``)."""
    thread = (await client.post("/threads", json={})).raise_for_status().json()["thread_id"]
    body = {"assistant_id": "agent", "input": _input(), "stream_mode": V1_MODES, "stream_subgraphs": True,
            "stream_resumable": True}
    received: list[tuple[str, Any, str | None]] = []
    run, todo, resumed_from = "", list(points), set()
    async with client.stream("POST", f"/threads/{thread}/runs/stream", json=body) as response:
        async for event in sse(response):
            received.append(event)
            if event[0] == "metadata":
                run = event[1]["run_id"]
            if len(received) >= todo[0]:
                todo.pop(0)
                break
    while True:
        last = next((e[2] for e in reversed(received) if e[2]), "0")
        resumed_from.add(last)
        before = len(received)
        headers = {"Last-Event-ID": last}
        params = {"stream_mode": json.dumps(V1_MODES), "stream_subgraphs": "true"}
        async with client.stream("GET", f"/threads/{thread}/runs/{run}/stream", params=params, headers=headers) as response:
            ended = True
            async for event in sse(response):
                received.append(event)
                if todo and len(received) >= todo[0]:
                    todo.pop(0)
                    ended = False
                    break
        if ended and len(received) == before:
            break  # the run is over and nothing is left to replay
    reference = await v1_join(client, thread, run, "0")
    key = lambda e: trees.sse_key(e[0], e[1])  # noqa: E731
    missing = Counter(map(key, reference)) - Counter(map(key, received))
    # langgraph#8112: a lost event whose id is one a rejoin resumed from shared its millisecond.
    lost_ids = []
    for event in reference:
        if missing[key(event)] > 0:
            missing[key(event)] -= 1
            lost_ids.append(event[2])
    return {**trees.compare(map(key, reference), map(key, (e for e in received if e[0] != "metadata"))),
            "lost_sharing_a_resume_id": sum(1 for i in lost_ids if i in resumed_from),
            "reconnects": len(points) - len(todo),
            "distinct_ids": len({e[2] for e in reference}), "events_with_ids": len(reference)}


async def _v2_stream(client: httpx.AsyncClient, thread: str, since: int | None, stop: Any) -> list[dict[str, Any]]:
    body: dict[str, Any] = {"channels": V2_CHANNELS}
    if since is not None:
        body["since"] = since
    got: list[dict[str, Any]] = []
    async with client.stream("POST", f"/threads/{thread}/stream/events", json=body) as response:
        response.raise_for_status()
        iterator = sse(response).__aiter__()
        while True:
            try:
                _, data, _ = await asyncio.wait_for(iterator.__anext__(), QUIET)
            except (TimeoutError, StopAsyncIteration):
                break
            if isinstance(data, dict):
                got.append(data)
                if stop(got):
                    break
    return got


def _v2_root_done(got: list[dict[str, Any]]) -> bool:
    last = got[-1]
    params = last.get("params", {})
    return (last.get("method") == "lifecycle" and not params.get("namespace")
            and (params.get("data") or {}).get("event") in ("completed", "failed"))


async def _v2_start(client: httpx.AsyncClient, thread: str) -> None:
    command = {"id": 1, "method": "run.start", "params": {"assistant_id": "agent", "input": _input()}}
    (await client.post(f"/threads/{thread}/commands", json=command)).raise_for_status()


async def langgraph_v2_tree(client: httpx.AsyncClient) -> Tree:
    """A tree over v2: the thread's event stream opened, then the run started."""
    tree = Tree()
    began = time.perf_counter()
    thread = (await client.post("/threads", json={})).raise_for_status().json()["thread_id"]
    tree.ids["thread"] = thread

    def stop(got: list[dict[str, Any]]) -> bool:
        if not tree.first_subagent and trees.v2_attribution(got[-1:])["subagent_events"]:
            tree.first_subagent = time.perf_counter() - began
        return _v2_root_done(got)

    starter = asyncio.create_task(_delayed_start(client, thread))
    tree.events = await _v2_stream(client, thread, None, stop)
    await starter
    tree.end = time.perf_counter() - began
    return tree


async def _delayed_start(client: httpx.AsyncClient, thread: str) -> None:
    await asyncio.sleep(0.05)  # the stream's request goes first, so nothing is missed
    await _v2_start(client, thread)


async def v2_dropping(client: httpx.AsyncClient, points: list[int]) -> dict[str, int]:
    """A v2 client that drops after each of ``points`` events and reopens with ``since`` = the
    last ``seq`` it got; then compared with the thread's whole stream (``since: 0``)."""
    thread = (await client.post("/threads", json={})).raise_for_status().json()["thread_id"]
    received: list[dict[str, Any]] = []
    todo = list(points)
    starter = asyncio.create_task(_delayed_start(client, thread))
    while True:
        since = received[-1]["seq"] if received else None
        count = len(received)
        part = await _v2_stream(client, thread, since,
                                lambda got: _v2_root_done(got) or bool(todo) and count + len(got) >= todo[0])
        received.extend(part)
        if todo and len(received) >= todo[0]:
            todo.pop(0)
        if not part or _v2_root_done(received):
            break
    await starter
    reference = await _v2_stream(client, thread, 0, lambda got: False)
    return {**trees.compare((e["seq"] for e in reference), (e["seq"] for e in received)),
            "reconnects": len(points) - len(todo)}


# -- finding one call's sub-agent events, and a word, over REST -------------------------------


async def taskwire_search(client: httpx.AsyncClient, conversation: str, call: str) -> dict[str, Any]:
    path = f"/api/conversations/{conversation}/events/search"
    began = time.perf_counter()
    items, page = [], None
    while True:
        params = {"parent_tool_use_id": call, "limit": 100, **({"page_id": page} if page else {})}
        answer = (await client.get(path, params=params)).raise_for_status().json()
        items += answer["items"]
        if not (page := answer.get("next_page_id")):
            break
    call_ms = (time.perf_counter() - began) * 1000
    began = time.perf_counter()
    word = (await client.get(path, params={"parent_tool_use_id": call, "body": trees.WORD, "limit": 100})).raise_for_status().json()
    return {"call_events": len(items), "call_ms": call_ms, "word_hits": len(word["items"]),
            "word_ms": (time.perf_counter() - began) * 1000, "requests": 2 + (len(items) - 1) // 100}


async def langgraph_search(client: httpx.AsyncClient, thread: str, call: str) -> dict[str, Any]:
    """What the peer offers: the root's checkpoint history, in which the ``tools`` task whose
    result answers ``call`` gives the sub-agent's namespace, then that namespace's history,
    grepped by the client (there is no search over events or messages)."""
    requests = 0
    began = time.perf_counter()
    history = (await client.post(f"/threads/{thread}/history", json={"limit": 1000})).raise_for_status().json()
    requests += 1
    task_id = None
    for checkpoint in history:
        for task in checkpoint.get("tasks") or []:
            result = (task.get("result") or {}).get("messages") or [{}]
            if task.get("name") == "tools" and result[0].get("tool_call_id") == call:
                task_id = task["id"]
    states: list[Any] = []
    if task_id:
        states = (await client.post(f"/threads/{thread}/history", json={"limit": 1000,
                  "checkpoint": {"checkpoint_ns": f"tools:{task_id}"}})).raise_for_status().json()
        requests += 1
    call_ms = (time.perf_counter() - began) * 1000
    began = time.perf_counter()
    messages = states[0]["values"].get("messages", []) if states else []
    hits = [m for m in messages if trees.WORD in json.dumps(m)]
    return {"call_events": len(messages), "call_ms": call_ms, "word_hits": len(hits),
            "word_ms": call_ms + (time.perf_counter() - began) * 1000, "requests": requests, "checkpoints": len(states)}
