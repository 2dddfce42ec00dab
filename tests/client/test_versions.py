"""Which servers the client speaks to (taskwire-client/README.md, "Versions"), against a real
server and against answers of servers it does not know."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskwire_client import Client, IncompatibleServer, UnknownEvent, parse_frame
from taskwire_client.version import SPEAKS_TO, __version__, compatibility
from tests.servers import isolated_settings, taskwire_server


async def test_the_client_speaks_to_a_server_of_its_own_version(tmp_path: Path) -> None:
    async with taskwire_server(isolated_settings(tmp_path)) as server:
        async with Client(server.url) as client:
            assert await client.check_server() is None
            assert (await client.server_info())["version"].startswith(".".join(map(str, SPEAKS_TO)))


def test_a_newer_server_is_spoken_to_with_a_warning_and_its_new_kinds_kept() -> None:
    newer = f"{SPEAKS_TO[0]}.{SPEAKS_TO[1] + 1}.0"
    warning = compatibility({"name": "taskwire", "version": newer})
    assert warning is not None and newer in warning
    event = parse_frame({"kind": "SomeFutureEvent", "id": "e1", "timestamp": "2026-12-04T00:00:00Z", "seq": 7,
                         "source": "agent", "subagent_id": "s1", "novel": {"x": 1}})
    assert isinstance(event, UnknownEvent) and event.kind == "SomeFutureEvent" and event.seq == 7
    assert event.model_extra == {"novel": {"x": 1}}


@pytest.mark.parametrize("info", [
    {"name": "taskwire", "version": "0.0.9"},
    {"name": "taskwire", "version": f"{SPEAKS_TO[0] + 1}.0.0"},
    {"name": "openhands-agent-server", "version": "1.58.2"},
    {"version": "0.1.0"},
    ["not", "an", "object"],
    {"name": "taskwire", "version": "one.two"},
], ids=["older", "next-major", "another-server", "no-name", "not-an-object", "unreadable-version"])
def test_a_server_it_does_not_speak_to_is_refused_saying_what_it_found(info: object) -> None:
    with pytest.raises(IncompatibleServer) as refused:
        compatibility(info)
    assert "taskwire" in str(refused.value)
    if isinstance(info, dict) and info.get("name") == "taskwire" and info["version"][0].isdigit():
        assert info["version"] in str(refused.value) and __version__ in str(refused.value)
