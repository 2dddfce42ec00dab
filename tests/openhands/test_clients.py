"""OpenHands sub-agents as other clients see them: the real AG-UI client, traces."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.agui.client import assert_accepted, events, of_type, run_client
from tests.openhands.helpers import openhands_server


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
