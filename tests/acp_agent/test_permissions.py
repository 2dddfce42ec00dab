"""``taskwire acp`` asks the editor: two parallel sub-agents each ask to run a command; the real
ACP SDK client gets two ``session/request_permission``s, each stamped with the sub-agent that
asks, and its answers (one allowed, one rejected) reach each its own sub-agent. Attached to a
server, a request answered elsewhere first leaves the editor's late answer without effect."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from taskwire.llm.mock_server import create_mock_app
from tests.acp_agent.helpers import TASKWIRE_ACP, Transcript, by_call, drive, embedded_env, final_status
from tests.acp_agent.helpers import stamp as stamp_of
from tests.permissions.helpers import finish, lane, task, terminal, wait_pending
from tests.permissions.test_tree import model_requests, tool_results
from tests.servers import RunningServer, isolated_settings, serve_app, taskwire_server, wait_for_status

PROMPT = "Go."
NEW, PROMPTED = 1, 2
SCRIPT = json.dumps({"strict": True, "lanes": [
    lane("sub-a", "Work A.", {"tool_calls": [terminal("echo from-a")]}, {"tool_calls": [finish("a done")]}),
    lane("sub-b", "Work B.", {"tool_calls": [terminal("echo from-b")]}, {"tool_calls": [finish("b done")]}),
    lane("main", None, {"tool_calls": [task("Work A", "Work A."), task("Work B", "Work B.")]},
         {"tool_calls": [finish("all done")]}),
]})
B_OUTPUT = "exit code: 0\nfrom-b\n"
"""What B's command prints, as its call's ``rawOutput.content``."""
ALLOW_A_REJECT_B = [
    {"match": {"toolCall": {"rawInput": {"command": "echo from-a"}}}, "choose": "allow_once"},
    {"match": {"toolCall": {"rawInput": {"command": "echo from-b"}}}, "choose": "reject_once"},
]


def asking_agent(mock_url: str) -> dict[str, Any]:
    return {"kind": "native", "approval": "always",
            "llm": {"api": "openai", "model": "mock", "base_url": f"{mock_url}/v1", "api_key": "k"}}


def steps(project: Path, agent: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"op": "initialize"}, {"op": "new", "cwd": str(project), "meta": {"taskwire": {"agent": agent}}},
            {"op": "prompt", "text": PROMPT}]


def asks_by_command(transcript: Transcript) -> dict[str, dict[str, Any]]:
    return {ask["toolCall"]["rawInput"]["command"]: ask for ask in transcript.permissions}


async def answered(server: RunningServer, conversation_id: str) -> dict[str, dict[str, Any]]:
    """Every request of the tree by its command, with its resolution."""
    response = await server.client.get(f"/api/conversations/{conversation_id}/permissions", params={"status": "all"})
    assert response.status_code == 200, response.text
    return {entry["arguments"]["command"]: entry for entry in response.json()}


def check_asks(transcript: Transcript, tree: list[dict[str, Any]], requests: dict[str, dict[str, Any]]) -> None:
    """Each ask names its request and its call, stamped with the sub-agent that asks, and offers
    the request's options; the call it names is the one the editor was shown under that stamp."""
    subagents = {s["description"]: s for s in tree}
    asks = asks_by_command(transcript)
    assert set(asks) == {"echo from-a", "echo from-b"}
    calls = by_call(transcript.updates(PROMPTED))
    for name, command in (("A", "echo from-a"), ("B", "echo from-b")):
        ask, sub, request = asks[command], subagents[f"Work {name}"], requests[command]
        meta = ask["toolCall"]["_meta"]
        assert meta["claudeCode"]["parentToolUseId"] == sub["parent_tool_use_id"]
        assert meta["taskwire"]["subagentId"] == sub["subagent_id"]
        assert meta["taskwire"]["requestId"] == request["request_id"] == ask["_meta"]["taskwire"]["requestId"]
        assert ask["toolCall"]["toolCallId"] == request["tool_call_id"]
        assert ask["toolCall"]["status"] == "pending" and ask["toolCall"]["title"] == command
        assert [(o["optionId"], o["kind"]) for o in ask["options"]] == [(o["option_id"], o["kind"]) for o in request["options"]]
        shown = calls[request["tool_call_id"]]
        assert shown[0]["_meta"]["claudeCode"]["parentToolUseId"] == sub["parent_tool_use_id"]
        # While it waits the call is pending again (it was shown in progress when recorded).
        assert "pending" in [u.get("status") for u in shown[1:]]


async def test_embedded_each_editor_answer_reaches_its_own_subagent(tmp_path: Path) -> None:
    log = tmp_path / "model.jsonl"
    project = tmp_path / "project"
    async with serve_app(create_mock_app(SCRIPT, log_path=log)) as mock_url:
        transcript = await drive(steps(project, asking_agent(mock_url)), env=embedded_env(tmp_path, tmp_path / "unused.yaml"),
                                 folder=tmp_path, permissions=ALLOW_A_REJECT_B)
    assert transcript.result(PROMPTED)["stopReason"] == "end_turn"
    assert transcript.sdk_errors == []
    session_id = transcript.result(NEW)["sessionId"]
    settings = isolated_settings(tmp_path, workspace_path=tmp_path / "store",
                                 database_url=f"sqlite:///{tmp_path / 'store' / 'taskwire.db'}")
    async with taskwire_server(settings) as server:
        tree = (await server.client.get(f"/api/conversations/{session_id}/subagents")).json()
        requests = await answered(server, session_id)
    check_asks(transcript, tree, requests)
    a, b = requests["echo from-a"], requests["echo from-b"]
    assert (a["status"], a["resolution"]["option_id"], a["resolution"]["answered_by"]) == ("allowed", "allow_once", "acp")
    assert (b["status"], b["resolution"]["option_id"], b["resolution"]["answered_by"]) == ("rejected", "reject_once", "acp")
    # Each answer reached its own sub-agent: A's model reads its output, B's the refusal.
    assert "from-a" in tool_results(model_requests(log, "sub-a", 1)[0])[a["tool_call_id"]]
    assert "rejected" in tool_results(model_requests(log, "sub-b", 1)[0])[b["tool_call_id"]]
    statuses = final_status(by_call(transcript.updates(PROMPTED)))
    assert statuses[a["tool_call_id"]] == "completed" and statuses[b["tool_call_id"]] == "failed"


async def test_attached_a_request_answered_elsewhere_first_ignores_the_editors_late_answer(
    tmp_path: Path, forwarding_server: RunningServer
) -> None:
    server = forwarding_server
    log = tmp_path / "model.jsonl"
    answered_elsewhere: list[dict[str, Any]] = []

    async def answer_b_over_rest(line: dict[str, Any]) -> None:
        if line["kind"] == "permission" and line["params"]["toolCall"]["rawInput"] == {"command": "echo from-b"}:
            meta = line["params"]["toolCall"]["_meta"]["taskwire"]
            response = await server.client.post(
                f"/api/conversations/{line['params']['sessionId']}/permissions/{meta['requestId']}",
                json={"decision": "allow"})
            answered_elsewhere.append(response.json())

    # The editor rejects B only once B's command has run: its answer comes after the REST one.
    b_ran = {"sessionUpdate": "tool_call_update", "status": "completed", "rawOutput": {"content": B_OUTPUT}}
    rules = [ALLOW_A_REJECT_B[0], {**ALLOW_A_REJECT_B[1], "after": b_ran}]
    async with serve_app(create_mock_app(SCRIPT, log_path=log)) as mock_url:
        transcript = await drive(steps(tmp_path / "project", asking_agent(mock_url)), env=embedded_env(tmp_path, tmp_path / "x"),
                                 folder=tmp_path, command=[*TASKWIRE_ACP, "--url", server.url], permissions=rules,
                                 on_line=answer_b_over_rest)
    assert transcript.result(PROMPTED)["stopReason"] == "end_turn"
    assert transcript.sdk_errors == []
    session_id = transcript.result(NEW)["sessionId"]
    tree = (await server.client.get(f"/api/conversations/{session_id}/subagents")).json()
    requests = await answered(server, session_id)
    check_asks(transcript, tree, requests)
    a, b = requests["echo from-a"], requests["echo from-b"]
    assert answered_elsewhere[0]["answered_by"] == "rest"
    assert (a["status"], a["resolution"]["answered_by"]) == ("allowed", "acp")
    # The first answer won; the editor's late reject changed nothing.
    assert (b["status"], b["resolution"]["answered_by"]) == ("allowed", "rest")
    late = [line for line in transcript.lines if line["kind"] == "permission_answer"
            and line["params"]["toolCall"]["rawInput"] == {"command": "echo from-b"}]
    assert late and late[0]["outcome"]["optionId"] == "reject_once"
    assert "from-b" in tool_results(model_requests(log, "sub-b", 1)[0])[b["tool_call_id"]]


async def test_forwarding_off_the_editor_is_still_asked_with_each_stamp(tmp_path: Path) -> None:
    log = tmp_path / "model.jsonl"
    async with serve_app(create_mock_app(SCRIPT, log_path=log)) as mock_url:
        transcript = await drive(steps(tmp_path / "project", asking_agent(mock_url)),
                                 env=embedded_env(tmp_path, tmp_path / "unused.yaml", forwarding=False),
                                 folder=tmp_path, permissions=ALLOW_A_REJECT_B)
    assert transcript.result(PROMPTED)["stopReason"] == "end_turn"
    asks = asks_by_command(transcript)
    # No sub-agent event reached the feed, yet each ask names who asks and offers its options.
    assert all(stamp_of(u) == (None, None) for u in transcript.updates(PROMPTED))
    assert {stamp_of(ask["toolCall"])[1] is not None for ask in asks.values()} == {True}
    assert len({stamp_of(ask["toolCall"]) for ask in asks.values()}) == 2
    assert all([o["kind"] for o in ask["options"]] == ["allow_once", "allow_always", "reject_once"] for ask in asks.values())
    a_call, b_call = (asks[c]["toolCall"]["toolCallId"] for c in ("echo from-a", "echo from-b"))
    assert "from-a" in tool_results(model_requests(log, "sub-a", 1)[0])[a_call]
    assert "rejected" in tool_results(model_requests(log, "sub-b", 1)[0])[b_call]


async def test_a_loaded_session_asks_about_what_still_waits(tmp_path: Path, forwarding_server: RunningServer) -> None:
    server = forwarding_server
    log = tmp_path / "model.jsonl"
    async with serve_app(create_mock_app(SCRIPT, log_path=log)) as mock_url:
        created = await server.client.post("/api/conversations", json={"agent": asking_agent(mock_url), "initial_message": PROMPT})
        assert created.status_code in (200, 201), created.text
        cid = created.json()["id"]
        waiting = await wait_pending(server, cid, 2)
        load = [{"op": "initialize"}, {"op": "load", "session": cid, "cwd": str(tmp_path / "project")},
                {"op": "answered", "count": 2}]
        transcript = await drive(load, env=embedded_env(tmp_path, tmp_path / "x"), folder=tmp_path,
                                 command=[*TASKWIRE_ACP, "--url", server.url], permissions=ALLOW_A_REJECT_B)
        transcript.result(2)
        await wait_for_status(server.client, cid, {"finished"})
    # Asked once each, after the replay, about the two requests that waited when it loaded.
    assert sorted(a["_meta"]["taskwire"]["requestId"] for a in transcript.permissions) == sorted(w["request_id"] for w in waiting)
    requests = await answered(server, cid)
    assert {(c, r["status"], r["resolution"]["answered_by"]) for c, r in requests.items()} == {
        ("echo from-a", "allowed", "acp"), ("echo from-b", "rejected", "acp")}


async def test_a_faulty_editors_answers_leave_the_requests_waiting(tmp_path: Path, forwarding_server: RunningServer) -> None:
    server = forwarding_server

    async def answer_over_rest(line: dict[str, Any]) -> None:
        if line["kind"] == "permission_answer":  # the editor answered wrongly: a person answers elsewhere
            request_id = line["params"]["toolCall"]["_meta"]["taskwire"]["requestId"]
            response = await server.client.post(f"/api/conversations/{line['params']['sessionId']}/permissions/{request_id}",
                                                json={"decision": "allow"})
            assert response.status_code == 200, response.text

    faulty = [
        {"match": {"toolCall": {"rawInput": {"command": "echo from-a"}}}, "reply": {"outcome": {"outcome": "maybe"}}},
        {"match": {"toolCall": {"rawInput": {"command": "echo from-b"}}},
         "reply": {"outcome": {"outcome": "selected", "optionId": "not-offered"}}},
    ]
    async with serve_app(create_mock_app(SCRIPT)) as mock_url:
        transcript = await drive(steps(tmp_path / "project", asking_agent(mock_url)), env=embedded_env(tmp_path, tmp_path / "x"),
                                 folder=tmp_path, command=[*TASKWIRE_ACP, "--url", server.url], permissions=faulty,
                                 on_line=answer_over_rest)
    assert transcript.result(PROMPTED)["stopReason"] == "end_turn"
    requests = await answered(server, transcript.result(NEW)["sessionId"])
    assert {(r["status"], r["resolution"]["answered_by"]) for r in requests.values()} == {("allowed", "rest")}
