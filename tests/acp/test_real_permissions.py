"""The REAL claude-agent-acp and Claude Code with ``permissions: "ask"`` (mode ``default``),
against ``mock-llm``: each command asks, the request is filed under the agent that asks, and
the answer reaches Claude Code. Skips without ``peers/node_modules`` (fails in CI)."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

from tests.acp.helpers import last_per_call
from tests.acp.test_real_claude_code import all_gone, claude_code_acp, need_claude_agent_acp
from tests.api.helpers import all_events, create
from tests.llm.conftest import RunningMock, serve_mock
from tests.permissions.helpers import answer, answer_each, by_command, pending, pending_sets, wait_pending
from tests.servers import RunningServer, wait_for_status

SCRIPT = Path(__file__).resolve().parents[1] / "permissions" / "scripts" / "claude_code_asks.yaml"
AGENT_A, AGENT_B = "toolu_main_1_0", "toolu_main_1_1"


def decide(request: dict[str, Any]) -> dict[str, Any]:
    """Allow everything but B's command, with the peer's own option ids."""
    kind = "reject_once" if "rejected-b" in request["arguments"]["command"] else "allow_once"
    return {"option_id": next(o["option_id"] for o in request["options"] if o["kind"] == kind)}


@asynccontextmanager
async def asking_claude_code(server: RunningServer, tmp_path: Path) -> AsyncIterator[tuple[RunningMock, str]]:
    """The real Claude Code, mode ``default``, ``permissions: "ask"``, running the script: the
    mock and the conversation, started."""
    need_claude_agent_acp()
    async with serve_mock(SCRIPT, tmp_path / "mock.jsonl") as mock:
        agent = {**claude_code_acp(mock, tmp_path / "home", "default"), "permissions": "ask"}
        yield mock, (await create(server, agent=agent, initial_message="Run the commands."))["id"]


def requests_of(log: Path, lane: str) -> list[dict[str, Any]]:
    return [json.loads(entry["body"]) for entry in map(json.loads, log.read_text().splitlines()) if entry["lane"] == lane]


async def test_real_claude_code_asks_through_acp_and_each_answer_reaches_its_subagent(
    forwarding_server: RunningServer, tmp_path: Path
) -> None:
    server = forwarding_server
    async with asking_claude_code(server, tmp_path) as (mock, cid):
        answered = by_command(await answer_each(server, cid, 3, decide))
        info = await wait_for_status(server.client, cid, {"finished", "error", "paused"}, timeout=240)
        assert info["status"] == "finished", info
        assert mock.script.unused_steps() == [] and mock.script.failures == [] == mock.script.unscripted

    subagents = {s["parent_tool_use_id"]: s["subagent_id"] for s in
                 (await server.client.get(f"/api/conversations/{cid}/subagents")).json()}
    assert "subagent_id" not in answered["main-ok"]
    for word, spawner in (("approved-a", AGENT_A), ("rejected-b", AGENT_B)):
        request = answered[word]
        assert (request["subagent_id"], request["parent_tool_use_id"]) == (subagents[spawner], spawner)
        assert [o["option_id"] for o in request["options"]] == ["allow-once", "allow-with-updates", "reject"]
    calls = last_per_call(await all_events(server, cid, include_subagents="true"))
    assert calls[answered["approved-a"]["tool_call_id"]]["status"] == "completed"
    rejected = calls[answered["rejected-b"]["tool_call_id"]]
    assert rejected["status"] == "failed" and rejected["subagent_id"] == subagents[AGENT_B]
    # Claude Code told B's model its command was refused, and B went on.
    [b_after] = requests_of(tmp_path / "mock.jsonl", "subagent-b")[1:]
    results = [b for m in b_after["messages"] if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_result"]
    assert results[-1].get("is_error") is True
    assert pending_sets(await all_events(server, cid))[-1] == set()
    assert (await server.client.delete(f"/api/conversations/{cid}")).status_code == 204
    await all_gone(tmp_path / "home")


async def test_interrupting_real_claude_code_while_it_asks_cancels_the_request(
    forwarding_server: RunningServer, tmp_path: Path
) -> None:
    server = forwarding_server
    async with asking_claude_code(server, tmp_path) as (_, cid):
        [request] = await wait_pending(server, cid, 1)
        assert (await server.client.post(f"/api/conversations/{cid}/interrupt")).status_code == 200
        assert (await wait_for_status(server.client, cid, {"finished", "error", "paused"}))["status"] == "paused"
        [entry] = await pending(server, cid, status="all")
        assert (entry["request_id"], entry["status"]) == (request["request_id"], "cancelled")
        # The call never ran: whoever closes it (Claude Code or the closing rule), it is not open.
        call = last_per_call(await all_events(server, cid))[request["tool_call_id"]]
        assert call["status"] in ("cancelled", "failed")
        assert (await answer(server, cid, request["request_id"], decision="allow")).status_code == 409
        assert (await server.client.delete(f"/api/conversations/{cid}")).status_code == 204
    await all_gone(tmp_path / "home")
