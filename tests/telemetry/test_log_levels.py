"""``taskwire serve`` at its default log level, as an operator first runs it: what it starts,
ends and refuses is said at ``info``, with the run's ids; a routine run writes nothing at
``warning`` or above."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.servers import ServerProcess
from tests.telemetry.runs import native_agent, run_to_end, subagents


async def test_default_level_logs_runs_and_refusals_at_info_and_nothing_alarming(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OH_", "OTEL_"))}
    env.update({"OH_LLM_API": "scripted", "OH_LOG_FORMAT": "json", "OH_CONFIG_FILE": str(tmp_path / "none.toml")})
    server = ServerProcess("taskwire", tmp_path, env)  # no OH_LOG_LEVEL: the default
    await server.start()
    try:
        conversation_id = await run_to_end(server.client, native_agent())
        entries = await subagents(server.client, conversation_id)
        missing = await server.client.get("/api/conversations/00000000-0000-0000-0000-000000000000")
        assert missing.status_code == 404
    finally:
        await server.stop()
        await server.client.aclose()
    lines = [json.loads(line) for line in server.log_path.read_text().splitlines()]
    assert any(l["level"] == "info" and l["message"].startswith("taskwire listening on") for l in lines), lines
    runs = [l for l in lines if l["message"].startswith("run ")]
    assert {l["level"] for l in runs} == {"info"}
    assert all(l["conversation_id"] == conversation_id for l in runs), runs
    by_agent: dict[str | None, list[str]] = {}
    for line in runs:
        by_agent.setdefault(line.get("subagent_id"), []).append(line["message"])
    assert set(by_agent) == {None} | {e["subagent_id"] for e in entries}
    assert all(messages == ["run started", "run ended: finished"] for messages in by_agent.values()), by_agent
    refused = [l for l in lines if "refused" in l["message"]]
    assert [l["level"] for l in refused] == ["info"] and "(conversation_not_found)" in refused[0]["message"], refused
    assert any(l["level"] == "info" and l["message"] == "taskwire stopped" for l in lines), lines
    assert not [l for l in lines if l["logger"] == "uvicorn.access"]  # a line per request only at debug
    assert not [l for l in lines if l["level"] in ("warning", "error")], "a routine run alarms no one"
