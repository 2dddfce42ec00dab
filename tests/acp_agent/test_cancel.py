"""``session/cancel`` mid-run: the prompt answers ``cancelled`` and every call it was shown is
closed, sub-agents' included, each update with its call's stamp."""

from __future__ import annotations

from pathlib import Path

from tests.acp_agent.helpers import SCRIPTS, by_call, drive, embedded_env, final_status, same_updates, stamp

SLEEPING = {"match": {"sessionUpdate": "tool_call", "rawInput": {"command": "sleep 30"}}, "count": 2}
"""Cancel once both leaves (sub-agent B and the nested one) are sleeping."""


async def test_cancel_mid_run_closes_every_call_with_its_stamp(tmp_path: Path) -> None:
    project = tmp_path / "project"
    steps = [
        {"op": "initialize"},
        {"op": "new", "cwd": str(project)},
        {"op": "prompt", "text": "Sleep.", "cancel_on": SLEEPING},
        {"op": "load", "cwd": str(project)},
    ]
    transcript = await drive(steps, env=embedded_env(tmp_path, SCRIPTS / "cancelled.yaml"), folder=tmp_path)
    assert transcript.result(2)["stopReason"] == "cancelled"
    assert transcript.sdk_errors == [] and transcript.validated == transcript.raw
    live = transcript.updates(2)
    calls = by_call(live)
    assert set(calls) == {"call_main_0_0", "call_main_0_1", "call_suba_0_0", "call_subb_0_0", "call_leaf_0_0"}
    # Each was running when the cancel came: the closing rule says failed (v1 has no cancelled).
    assert final_status(calls) == dict.fromkeys(calls, "failed")
    for call_id, updates in calls.items():
        closing = updates[-1]
        assert closing["content"][-1]["content"]["text"].startswith("The tool call was interrupted"), call_id
        assert stamp(closing) == stamp(updates[0]), call_id  # closed under the call's own stamp
    assert stamp(calls["call_leaf_0_0"][-1])[0] == "call_suba_0_0"
    assert stamp(calls["call_subb_0_0"][-1])[0] == "call_main_0_1"
    assert stamp(calls["call_main_0_0"][-1]) == (None, None)
    # Nothing comes after the answer, and the stored stream replays the same.
    same_updates(live, transcript.updates(3)[1:])
