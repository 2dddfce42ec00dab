"""The client's live stream across a real server restart: every event once, in order."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from taskwire_client import Client, root_status
from taskwire.events import ActionEvent, Event, ObservationEvent
from tests.servers import START_TIMEOUT, ServerProcess
from tests.viewer.gates import Gates, gated_subagents_script

WAIT = 120.0


async def test_the_stream_resumes_across_a_server_killed_and_restarted_on_the_same_port_and_database(tmp_path: Path) -> None:
    gates = Gates(tmp_path / "gates")
    script = tmp_path / "gated.yaml"
    script.write_text(gated_subagents_script(gates))  # JSON is YAML
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    env.update(
        OH_FORWARD_SUBAGENT_EVENTS="true", OH_LLM_API="scripted", OH_LLM_SCRIPT=str(script),
        OH_CONFIG_FILE=str(tmp_path / "no-such-file.toml"), PYTHONUNBUFFERED="1",
    )
    server = ServerProcess("server", tmp_path, env)  # SQLite under its workspace: kept across restarts
    await server.start()
    received: list[Event] = []
    waiting = asyncio.Event()  # both sub-agents are in their gated command

    async def follow(client: Client, conversation_id: str) -> int:
        async with client.events(conversation_id, retry_for=2 * START_TIMEOUT) as live:
            async for event in live:
                received.append(event)
                gated = [e for e in received if isinstance(e, ActionEvent) and "gate" in str(e.arguments.get("command"))]
                if len(gated) == 2:
                    waiting.set()
                if root_status(event) == "finished":
                    return live.connections
        raise AssertionError("the stream ended before the run finished")

    try:
        async with Client(server.url) as client:
            conversation = await client.create(initial_message="Go.")
            follower = asyncio.create_task(follow(client, conversation["id"]))
            await asyncio.wait_for(waiting.wait(), WAIT)
            await server.kill()  # mid-run, sockets open
            gates.open("a", "b")  # lets the orphaned gate commands end
            await server.start()
            await client.send(conversation["id"], "Go on.")  # loads it: the dead run is closed, a new one starts
            connections = await asyncio.wait_for(follower, WAIT)
            stored = [e async for e in client.search(conversation["id"], include_subagents=True)]
    finally:
        await server.stop()
        await server.client.aclose()
    seqs = [e.seq for e in received if e.seq is not None]
    assert connections >= 2
    assert seqs == [e.seq for e in stored]  # every stored event, once, in order
    assert [e.id for e in received if e.seq is not None] == [e.id for e in stored]
    closed = [e for e in received if isinstance(e, ObservationEvent) and "the server running it stopped" in e.content]
    # What the killed server left open (both task calls, the gated commands) is closed after the restart.
    assert sorted(e.tool_name for e in closed) == ["task", "task", "terminal", "terminal"]
