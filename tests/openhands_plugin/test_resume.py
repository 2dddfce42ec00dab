"""A resumed task (``task`` with ``resume=``) on the agent-server: OpenHands 1.58.2 gives it no
visualizer, so the plugin reads its events from what OpenHands persists for it while the call
runs. They reach the socket stamped with the resuming call and the same ``subagent_id``, and the
search files both runs under that one sub-agent."""

from __future__ import annotations

from pathlib import Path

from tests.openhands_plugin.agent_server import agent_server, everything, run_watched, stamped, start_conversation
from tests.openhands_plugin.helpers import mock_llm, workspace_with_agents


async def test_a_resumed_task_is_forwarded_under_the_resuming_call_as_the_same_subagent(tmp_path: Path) -> None:
    async with mock_llm(tmp_path, "resume") as llm, agent_server(tmp_path / "server") as server:
        conversation = await start_conversation(server, llm.url, workspace_with_agents(tmp_path / "ws"))
        frames = await run_watched(server, conversation)
        path = f"/api/conversations/{conversation}/subagent_events/search"
        first_run = await everything(server, path, parent_tool_use_id="call_main_0_0")
        resumed = await everything(server, path, parent_tool_use_id="call_main_1_0")
        subagent = first_run[0]["subagent_id"]
        both = await everything(server, path, subagent_id=subagent)
    assert frames[-1]["value"] == "finished"
    by_call = {c: [f for f in stamped(frames) if f["parent_tool_use_id"] == c] for c in ("call_main_0_0", "call_main_1_0")}
    assert {f["subagent_id"] for f in stamped(frames)} == {subagent}
    live = by_call["call_main_1_0"]
    assert live[0]["kind"] == "MessageEvent" and live[0]["llm_message"]["content"][0]["text"] == "Go on with it"
    assert [f["action"]["thought"] for f in live if f["kind"] == "ActionEvent" and f["tool_name"] == "think"] == ["alpha resumed"]
    assert [f["action"]["message"] for f in live if f["kind"] == "ActionEvent" and f["tool_name"] == "finish"] == ["alpha done again"]
    # Live: before the parent read the resumed call's result.
    result = next(i for i, f in enumerate(frames) if f["kind"] == "ObservationEvent" and f.get("tool_call_id") == "call_main_1_0"
                  and "parent_tool_use_id" not in f)
    assert all(frames.index(f) < result for f in live)
    assert first_run == by_call["call_main_0_0"] and resumed == live
    assert both == first_run + resumed
