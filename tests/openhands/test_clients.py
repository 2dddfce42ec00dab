"""OpenHands sub-agents as other clients see them: the real AG-UI client, ``taskwire acp``."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from taskwire.llm.mock_server import create_mock_app
from tests.acp_agent.helpers import TASKWIRE_ACP, by_call, drive, embedded_env, stamp
from tests.agui.client import assert_accepted, events, of_type, run_client
from tests.openhands.helpers import SCRIPTS, openhands_server
from tests.servers import serve_app
from tests.services import need_openhands


async def test_agui_client_sees_openhands_subagents_start_under_their_task_calls(tmp_path: Path) -> None:
    async with openhands_server(tmp_path, "two_builtin", forward_subagent_events=True) as oh:
        thread = str(uuid.uuid4())
        step = {"op": "run", "threadId": thread, "runId": "run-1", "message": "Go.",
                "forwardedProps": {"taskwire": {"agent": oh.agent()}}}
        (result,) = await run_client(oh.server, step)
        subagents = (await oh.server.client.get(f"/api/conversations/{thread}/subagents")).json()

    assert_accepted(result)
    sent = events(result)
    assert sent[-1]["type"] == "RUN_FINISHED" and sent[-1]["outcome"] == {"type": "success"}
    starts = {e["subagentRunId"]: e["parentToolCallId"] for e in of_type(sent, "SUBAGENT_STARTED")}
    assert starts == {s["subagent_id"]: s["parent_tool_use_id"] for s in subagents}
    assert set(starts.values()) == {"call_main_0_0", "call_main_0_1"}
    assert sorted(e["subagentRunId"] for e in of_type(sent, "SUBAGENT_FINISHED")) == sorted(starts)
    # Each sub-agent's own tool calls carry its run id.
    own_calls = [e for e in sent if e["type"] == "TOOL_CALL_START" and e.get("subagentRunId")]
    assert {e["subagentRunId"] for e in own_calls} == set(starts)


async def test_taskwire_acp_shows_an_editor_openhands_subagents_stamped_with_their_calls(tmp_path: Path) -> None:
    python = need_openhands()
    async with serve_app(create_mock_app(SCRIPTS / "two_builtin.yaml")) as mock_url:
        agent = {"kind": "openhands", "llm": {"model": "openai/scripted", "base_url": f"{mock_url}/v1", "api_key": "k"}}
        steps = [{"op": "initialize"}, {"op": "new", "cwd": str(tmp_path / "project")}, {"op": "prompt", "text": "Go."}]
        env = embedded_env(tmp_path, SCRIPTS / "two_builtin.yaml", OH_OPENHANDS_PYTHON=python)
        transcript = await drive(steps, env=env, folder=tmp_path, command=[*TASKWIRE_ACP, "--agent", json.dumps(agent)])

    assert transcript.sdk_errors == []
    assert transcript.result(2)["stopReason"] == "end_turn"
    stamped = {stamp(u)[0] for u in transcript.updates(2)} - {None}
    assert stamped == {"call_main_0_0", "call_main_0_1"}
    # Each sub-agent's own finish call is reported under its spawning call, never the main agent's.
    for call, updates in by_call(transcript.updates(2)).items():
        owners = {stamp(u)[0] for u in updates}
        assert len(owners) == 1, (call, owners)
