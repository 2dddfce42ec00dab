"""Published, never persisted into the parent; off means nothing changes. The same tree runs on
the agent-server with the plugin and forwarding on, with the plugin and forwarding off, and
without the plugin: the parent's stored events and counts are the same, every model request is
byte for byte the same, and with forwarding off the frames, routes and tools are those of the
server without the plugin."""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path
from typing import Any

from tests.openhands_plugin.agent_server import (
    agent_server, everything, run_watched, stamped, start_conversation, unstamped)
from tests.openhands_plugin.helpers import CRITIC_PLUGIN, INNER_CALL, TREE_CALLS, mock_llm, workspace_with_agents

CONVERSATION = str(uuid.UUID("0b5e7a3c-1d2f-4a6b-8c9d-0e1f2a3b4c5d"))
VOLATILE = {"id", "timestamp", "parent_id", "action_id", "llm_response_id"}


def clock_free(text: str) -> str:
    """Text less the minute OpenHands' system prompt gives as the current time."""
    return re.sub(r"The current date and time is: [0-9T:-]+", "The current date and time is: <now>", text)


def without_volatile(value: Any) -> Any:
    """An event less what differs between any two runs (ids drawn at random, clock times)."""
    if isinstance(value, dict):
        return {k: without_volatile(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [without_volatile(v) for v in value]
    return clock_free(value) if isinstance(value, str) else value


async def run_once(tmp_path: Path, name: str, **server: Any) -> dict[str, Any]:
    """The tree on one server: what a client and the model saw."""
    # The same workspace path each time, made afresh: OpenHands names it in its prompts.
    workspace = tmp_path / "ws"
    shutil.rmtree(workspace, ignore_errors=True)
    workspace_with_agents(workspace)
    async with mock_llm(tmp_path / name, "tree") as llm, agent_server(tmp_path / name / "server", **server) as oh:
        # One task at a time: OpenHands numbers tasks (``Task ID: task_0000000N``, which its model
        # reads) in the order its threads reach its TaskManager, a race of its own.
        conversation = await start_conversation(oh, llm.url, workspace, concurrency=1, conversation_id=CONVERSATION,
                                                plugins=[{"source": str(CRITIC_PLUGIN)}])
        frames = await run_watched(oh, conversation)
        seen = {
            "frames": frames,
            "events": await everything(oh, f"/api/conversations/{conversation}/events/search"),
            "count": (await oh.client.get(f"/api/conversations/{conversation}/events/count")).json(),
            "openapi": (await oh.client.get("/openapi.json")).json(),
            "tools": [(await oh.client.get(path)).json() for path in ("/api/tools/", "/api/tools/catalog")],
            "search": (await oh.client.get(f"/api/conversations/{conversation}/subagent_events/search")).status_code,
        }
    # The title the server asks for in the background comes at any moment: apart.
    seen["requests"] = [same_parent(line["body"]) for line in llm.requests() if line["lane"] != "title"]
    seen["titles"] = [line["body"] for line in llm.requests() if line["lane"] == "title"]
    return seen


def same_parent(body: str) -> str:
    """A request less what OpenHands makes differ between any two runs, whatever the plugin: the
    minute its system prompt gives as the current time, and a sub-agent's ``prompt_cache_key``,
    its parent's conversation id, a fresh uuid4 when that parent is itself a sub-agent (the
    root's id is the same in every run)."""
    return re.sub(r'"prompt_cache_key":"[0-9a-f-]{36}"',
                  lambda m: m[0] if CONVERSATION in m[0] else '"prompt_cache_key":"<a sub-agent>"', clock_free(body))


def events_of(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events less state updates (they carry the model's URL, timings, costs; their keys are
    compared apart)."""
    return [f for f in frames if f["kind"] != "ConversationStateUpdateEvent"]


def frame_kinds(frames: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The events' kinds in order, and the state updates' keys, less the usage statistics the
    server sends as the model's answers come in. The keys are compared as a set with repeats:
    the server publishes some updates from its event loop and the rest from the agent's thread,
    so where they fall among the events is a matter of timing, with or without the plugin."""
    kinds = [f["kind"] for f in frames if f["kind"] != "ConversationStateUpdateEvent"]
    return kinds, sorted(f["key"] for f in frames if f["kind"] == "ConversationStateUpdateEvent" and f["key"] != "stats")


async def test_the_parent_and_its_model_are_the_same_and_off_is_as_without_the_plugin(tmp_path: Path) -> None:
    on = await run_once(tmp_path, "on", forward="true")
    off = await run_once(tmp_path, "off", forward="false")
    without = await run_once(tmp_path, "without", plugin=False, forward=None)

    assert {f["parent_tool_use_id"] for f in stamped(on["frames"])} == {*TREE_CALLS, INNER_CALL}
    assert on["search"] == 200

    # Never persisted into the parent, never shown to its model.
    assert len(on["requests"]) == 9  # main 2, planner 2, inner 2, beta 2, critic 1
    assert on["requests"] == off["requests"] == without["requests"]
    assert list(map(same_parent, on["titles"])) == list(map(same_parent, off["titles"])) == \
        list(map(same_parent, without["titles"]))
    assert frame_kinds(on["events"]) == frame_kinds(off["events"]) == frame_kinds(without["events"])
    assert without_volatile(events_of(on["events"])) == without_volatile(events_of(off["events"])) == \
        without_volatile(events_of(without["events"]))
    assert on["count"] == off["count"] == without["count"] == len(on["events"])
    assert frame_kinds(unstamped(on["frames"])) == frame_kinds(off["frames"])

    # Off: the frames, routes and tools of the server without the plugin.
    assert not stamped(off["frames"])
    assert frame_kinds(off["frames"]) == frame_kinds(without["frames"])
    assert without_volatile(events_of(off["frames"])) == without_volatile(events_of(without["frames"]))
    assert off["openapi"] == without["openapi"]
    assert on["tools"] == off["tools"] == without["tools"]
    assert off["search"] == without["search"] == 404
    assert not [p for p in off["openapi"]["paths"] if "subagent_events" in p]
    assert {"/api/conversations/{conversation_id}/subagent_events/search",
            "/api/conversations/{conversation_id}/subagent_events/count"} <= set(on["openapi"]["paths"])
