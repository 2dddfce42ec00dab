"""A host that began its conversation's stream knows the events a native agent's history is
made of, as the store would give them back, so building the first backend need not read them;
a host loaded from a stream that holds events reads it, as a resumed run always did."""

from __future__ import annotations

from pathlib import Path

from taskwire.runtime.backends import own_events
from taskwire.runtime.history import HISTORY_EVENTS
from tests.api.helpers import all_events, create, scripted_agent
from tests.servers import isolated_settings, taskwire_server

SCRIPT = '{"lanes": [{"name": "main", "turns": [{"text": "Hello."}]}]}'


async def test_a_new_conversations_host_knows_what_its_stream_holds(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        info = await create(server, agent=scripted_agent(SCRIPT), initial_message="One.", run=False)
        cid = info["id"]
        sent = await server.client.post(f"/api/conversations/{cid}/events", json={"content": "Two.", "run": False})
        assert sent.status_code == 202
        runtime = server.runtime
        host = runtime.loaded(cid)
        stored = [e for e in await own_events(runtime.store, host) if isinstance(e, HISTORY_EVENTS)]
        assert [e.content for e in stored] == ["One.", "Two."]
        known = host.known_history()
        assert known is not None and [e.model_dump() for e in known] == [e.model_dump() for e in stored]
        assert host.known_history() is None  # given once: a backend built later reads the stream

        await runtime.unload(cid)
        reloaded = await runtime.host(cid)
        assert reloaded.known_history() is None  # its stream holds events: they are read back


async def test_a_reloaded_conversations_run_sees_the_messages_stored_before(tmp_path: Path) -> None:
    # The lane is chosen by the first user message: an agent that had only the second would
    # get no scripted answer.
    script = '{"lanes": [{"name": "main", "match": {"first_user_ends_with": "One."}, "turns": [{"text": "Saw One."}]}]}'
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        info = await create(server, agent=scripted_agent(script), initial_message="One.", run=False)
        cid = info["id"]
        await server.runtime.unload(cid)
        await server.client.post(f"/api/conversations/{cid}/events", json={"content": "Two."})
        assert (await server.runtime.wait(cid, timeout=30)).status == "finished"
        events = await all_events(server, cid)
        assert [e["content"] for e in events if e["kind"] == "MessageEvent"] == ["One.", "Two.", "Saw One."]
