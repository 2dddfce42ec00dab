"""OpenHands sub-agents over the socket, forwarding on and off: with it on, every sub-agent event
arrives stamped with its ``task`` call; the parent's stored events and its model's requests are
the same either way."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

from tests.api.helpers import all_events, create
from tests.api.socket_client import next_frame, open_socket
from tests.api.test_subagents import without_volatile
from tests.claude_sdk.watch import frames_until_run_ends, root_frames, say
from tests.openhands.helpers import openhands_server

CALLS = {"call_main_0_0", "call_main_0_1", "call_main_0_2"}


async def run_watched(tmp_path: Path, flag: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """The socket's frames, the parent's stored events, the main agent's request bodies."""
    async with openhands_server(tmp_path, "three_subagents", forward_subagent_events=flag,
                                workspace_roots=[tmp_path.parent]) as oh:
        # The same workspace path both times: OpenHands names it in its system prompt.
        workspace = oh.workspace.rename(tmp_path.parent / "openhands-ws")
        # One task at a time: OpenHands numbers tasks (``Task ID: task_0000000N``, which its model
        # reads) in the order its threads reach its TaskManager, a race of its own.
        info = await create(oh.server, agent=oh.agent(tool_concurrency_limit=1), workspace=str(workspace), run=False)
        async with open_socket(oh.server, info["id"]) as ws:
            await next_frame(ws)  # full_state
            await say(oh.server, info["id"], "Go.")
            frames = await frames_until_run_ends(ws)
        assert frames[-1]["value"] == "finished"
        parent = await all_events(oh.server, info["id"])
        shutil.rmtree(workspace / ".taskwire")  # OpenHands' own record of the run
        workspace.rename(oh.workspace)
    # OpenHands sends its conversation's id as ``prompt_cache_key``: the one byte range that
    # differs between two conversations, whatever the flag.
    own_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"taskwire:{info['id']}"))
    requests = [line["body"].replace(own_id, "<conversation>") for line in map(json.loads, oh.log.read_text().splitlines())
                if _first_user(line["body"]) == "Go."]
    assert all("<conversation>" in body for body in requests)
    return frames, parent, requests


def _first_user(body: Any) -> str:
    data = json.loads(body) if isinstance(body, str) else body
    user = next(m for m in data["messages"] if m["role"] == "user")
    content = user["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


async def test_forwarding_on_and_off_the_parent_and_its_model_see_the_same(tmp_path: Path) -> None:
    (tmp_path / "off").mkdir()
    (tmp_path / "on").mkdir()
    frames_off, parent_off, requests_off = await run_watched(tmp_path / "off", False)
    frames_on, parent_on, requests_on = await run_watched(tmp_path / "on", True)

    stamped_on = [f for f in frames_on if "parent_tool_use_id" in f]
    assert {f["parent_tool_use_id"] for f in stamped_on} == CALLS
    assert {f["kind"] for f in stamped_on} >= {"SubagentStartedEvent", "ActionEvent", "ObservationEvent", "SubagentFinishedEvent"}
    assert not [f for f in frames_off if "parent_tool_use_id" in f]
    assert [f["kind"] for f in root_frames(frames_on) if f["kind"] != "ConversationStateUpdateEvent"] == \
        [f["kind"] for f in frames_off if f["kind"] != "ConversationStateUpdateEvent"]

    # Parallel sub-agents end in any order, so their results may be stored in any order.
    assert sorted(json.dumps(without_volatile(e), sort_keys=True) for e in parent_off) == \
        sorted(json.dumps(without_volatile(e), sort_keys=True) for e in parent_on)
    assert len(requests_off) == 2
    assert requests_off == requests_on

