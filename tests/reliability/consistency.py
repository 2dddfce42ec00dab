"""What a conversation must look like after any interruption: nothing left half done."""

from __future__ import annotations

from typing import Any

from tests.api.helpers import all_events
from tests.servers import RunningServer


async def assert_consistent(server: RunningServer, conversation_id: str) -> dict[str, Any]:
    """Every conversation of the tree: its stored status equals its last status event (``idle``
    when it has none); every
    tool call has its observation; every started sub-agent finished. Returns the root's info."""
    client = server.client
    info = (await client.get(f"/api/conversations/{conversation_id}")).json()
    events = await all_events(server, conversation_id, include_subagents="true")
    streams: dict[str | None, list[dict[str, Any]]] = {}
    for event in events:
        streams.setdefault(event.get("subagent_id"), []).append(event)
    tree = (await client.get(f"/api/conversations/{conversation_id}/subagents")).json()
    for stream_id in {None, *(s["subagent_id"] for s in tree)}:
        stream = streams.get(stream_id, [])
        record = info if stream_id is None else (await client.get(f"/api/conversations/{stream_id}")).json()
        statuses = [e["value"] for e in stream if e["kind"] == "ConversationStateUpdateEvent" and e["key"] == "status"]
        where = f"conversation {conversation_id}" + (f", sub-agent {stream_id}" if stream_id else "")
        # A sub-agent cancelled before it ran never changed status: it is still `idle`.
        last = statuses[-1] if statuses else "idle"
        assert record["status"] == last, f"{where}: row says {record['status']!r}, stream {statuses}"
        assert record["status"] != "running", f"{where}: still running with nothing running it"
        calls = {e["tool_call_id"] for e in stream if e["kind"] == "ActionEvent"}
        closed = {e["tool_call_id"] for e in stream if e["kind"] == "ObservationEvent"}
        assert calls <= closed, f"{where}: tool calls without an observation: {sorted(calls - closed)}"
        kinds = [e["kind"] for e in stream]
        if stream_id is not None:
            assert kinds.count("SubagentStartedEvent") == 1, f"{where}: {kinds}"
            assert kinds.count("SubagentFinishedEvent") == 1, f"{where}: never finished: {kinds}"
    assert all(s["status"] != "running" for s in tree), f"{conversation_id}: {tree}"
    seqs = [e["seq"] for e in events]
    assert len(seqs) == len(set(seqs)) and seqs == sorted(seqs), f"{conversation_id}: seq {seqs}"
    return info
