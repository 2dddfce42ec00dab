"""The REAL Claude Code through ``claude-agent-sdk`` with ``permissions: "ask"`` and
``permission_mode: "default"``, against ``mock-llm``: each command asks through
``can_use_tool``; the requests are filed under the sub-agents that ask, and a denial (with the
person's reason) reaches Claude Code, whose sub-agent goes on. Skips without the bundled CLI
(fails in CI)."""

from __future__ import annotations

import json
import os
import signal
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

from tests.api.helpers import all_events, create
from tests.claude_sdk.real_claude import Mock, claude_agent, claude_children, mock_llm, need_claude_code
from tests.claude_sdk.watch import last_call
from tests.permissions.helpers import answer, answer_each, by_command, pending, pending_sets, wait_pending
from tests.servers import RunningServer, isolated_settings, taskwire_server, wait_for_status

SCRIPT = Path(__file__).resolve().parents[1] / "permissions" / "scripts" / "claude_code_asks.yaml"
AGENT_A, AGENT_B = "toolu_main_1_0", "toolu_main_1_1"
REASON = "not this one, b"


@asynccontextmanager
async def asking_claude(tmp_path: Path, **settings: Any) -> AsyncIterator[tuple[Mock, RunningServer, str]]:
    """The real Claude Code, mode ``default``, ``permissions: "ask"``, running the script under
    a server: the mock (its requests logged to ``tmp_path/requests.jsonl``), the server and the
    conversation, started."""
    need_claude_code()
    async with mock_llm(SCRIPT, tmp_path / "requests.jsonl") as mock:
        async with taskwire_server(isolated_settings(tmp_path, **settings)) as server:
            agent = claude_agent(mock, tmp_path / "home", permission_mode="default", permissions="ask")
            yield mock, server, (await create(server, agent=agent, initial_message="Run the commands."))["id"]


def decide(request: dict[str, Any]) -> dict[str, Any]:
    if "rejected-b" in request["arguments"]["command"]:
        return {"decision": "reject", "reason": REASON}
    return {"decision": "allow"}


async def test_real_claude_code_asks_through_can_use_tool_and_a_denial_reaches_its_subagent(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    async with asking_claude(tmp_path, forward_subagent_events=True) as (mock, server, cid):
        answered = by_command(await answer_each(server, cid, 3, decide))
        info = await wait_for_status(server.client, cid, {"finished", "error", "paused"}, timeout=240)
        assert info["status"] == "finished", info
        subagents = {s["parent_tool_use_id"]: s["subagent_id"] for s in
                     (await server.client.get(f"/api/conversations/{cid}/subagents")).json()}
        streams = {spawner: await all_events(server, sub) for spawner, sub in subagents.items()}
        root = await all_events(server, cid)
        assert mock.script.unused_steps() == [] and mock.script.failures == [] == mock.script.unscripted
    assert claude_children() == []

    assert "subagent_id" not in answered["main-ok"] and answered["main-ok"]["tool_name"] == "Bash"
    for word, spawner in (("approved-a", AGENT_A), ("rejected-b", AGENT_B)):
        request = answered[word]
        assert (request["subagent_id"], request["parent_tool_use_id"]) == (subagents[spawner], spawner)
        assert any(e["kind"] == "PermissionRequestEvent" and e["request_id"] == request["request_id"] for e in streams[spawner])
    assert last_call(streams[AGENT_A], answered["approved-a"]["tool_call_id"])["status"] == "completed"
    assert last_call(streams[AGENT_B], answered["rejected-b"]["tool_call_id"])["status"] == "failed"
    # The denial and its reason reached B's model, and B went on to answer.
    b_requests = [json.loads(e["body"]) for e in map(json.loads, log.read_text().splitlines()) if e["lane"] == "subagent-b"]
    results = [b for m in b_requests[-1]["messages"] if isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    assert results[-1].get("is_error") is True and REASON in json.dumps(results[-1])
    assert streams[AGENT_B][-1]["kind"] == "SubagentFinishedEvent" and streams[AGENT_B][-1]["status"] == "completed"
    assert pending_sets(root)[-1] == set()


async def test_claude_code_dying_while_a_request_waits_cancels_it(tmp_path: Path) -> None:
    async with asking_claude(tmp_path) as (_, server, cid):
        [request] = await wait_pending(server, cid, 1)
        for pid in claude_children():
            os.kill(pid, signal.SIGKILL)
        info = await wait_for_status(server.client, cid, {"finished", "error", "paused"}, timeout=60)
        assert info["status"] == "error"
        [entry] = await pending(server, cid, status="all")
        assert entry["request_id"] == request["request_id"] and entry["status"] == "cancelled"
        assert pending_sets(await all_events(server, cid))[-1] == set()
        late = await answer(server, cid, request["request_id"], decision="allow")
        assert late.status_code == 409


async def test_cancelling_a_subagent_while_it_asks_cancels_its_request_and_its_sibling_goes_on(tmp_path: Path) -> None:
    async with asking_claude(tmp_path) as (_, server, cid):
        [main] = await wait_pending(server, cid, 1)
        assert (await answer(server, cid, main["request_id"], decision="allow")).status_code == 200
        asking = by_command(await wait_pending(server, cid, 2))
        a, b = asking["approved-a"], asking["rejected-b"]
        cancelled = await server.client.post(f"/api/conversations/{cid}/subagents/{a['subagent_id']}/cancel")
        assert cancelled.status_code == 202, cancelled.text
        await wait_pending(server, cid, 1)  # only B's still waits
        assert (await answer(server, cid, b["request_id"], decision="allow")).status_code == 200
        info = await wait_for_status(server.client, cid, {"finished", "error", "paused"}, timeout=240)
        assert info["status"] == "finished", info
        statuses = {e["request_id"]: e for e in await pending(server, cid, status="all")}
        subagents = {s["subagent_id"]: s for s in (await server.client.get(f"/api/conversations/{cid}/subagents")).json()}
        a_stream = await all_events(server, a["subagent_id"])
    assert statuses[a["request_id"]]["status"] == "cancelled"
    assert statuses[a["request_id"]]["resolution"]["answered_by"] == "server"
    assert statuses[b["request_id"]]["status"] == "allowed"
    assert subagents[a["subagent_id"]]["status"] == "cancelled"
    assert subagents[b["subagent_id"]]["status"] == "completed"
    assert last_call(a_stream, a["tool_call_id"])["status"] in ("cancelled", "failed")
