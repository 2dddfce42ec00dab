"""Child sessions that act: ``session/cancel`` naming one child stops that sub-agent alone (its
sibling and the turn go on), a cancel of a finished or unknown child is refused without harm,
and a child that asks permission is shown ``requires_action`` while its request (sent on its own
session) waits, ``running`` after; in embedded and attached modes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taskwire.llm.mock_server import create_mock_app
from tests.acp_agent.helpers import SCRIPTS, TASKWIRE_ACP, Transcript, drive, embedded_env
from tests.acp_agent.test_permissions import ALLOW_A_REJECT_B, SCRIPT, answered, asking_agent
from tests.acp_agent.test_permissions import steps as asking_steps
from tests.permissions.helpers import wait_pending
from tests.servers import RunningServer, isolated_settings, serve_app, taskwire_server, wait_for_status

SLEEPING_B = {"sessionUpdate": "tool_call", "rawInput": {"command": "sleep 60"}}
B = {"sessionUpdate": "subagent_update", "title": "Sleep in B"}
A = {"sessionUpdate": "subagent_update", "title": "Short A"}
PROMPTED, CANCELLED, AWAITED, CANCEL_AGAIN, CANCEL_UNKNOWN, LISTED = 2, 4, 5, 6, 7, 8


def states(transcript: Transcript) -> dict[str, list[dict[str, Any]]]:
    """Each child's ``state`` snapshots, by its title, in order."""
    titles: dict[str, str] = {}
    found: dict[str, list[dict[str, Any]]] = {}
    for update in transcript.updates():
        if update["sessionUpdate"] != "subagent_update":
            continue
        title = titles.setdefault(update["sessionId"], update.get("title", ""))
        if "state" in update:
            found.setdefault(title, []).append(update["state"])
    return found


def cancel_steps(project: Path, agent: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return [
        {"op": "initialize"},
        {"op": "new", "cwd": str(project), **({"meta": {"taskwire": {"agent": agent}}} if agent else {})},
        {"op": "prompt", "text": "Go.", "background": True},
        {"op": "wait", "match": SLEEPING_B},
        {"op": "cancel", "session_of": {"match": B}},
        {"op": "awaited"},
        {"op": "cancel", "session_of": {"match": B}},
        {"op": "cancel", "session": "no-such-session"},
        {"op": "list", "cwd": str(project)},
    ]


def check_one_cancelled(transcript: Transcript) -> None:
    assert transcript.sdk_errors == [] and transcript.validated == transcript.raw
    assert transcript.result(AWAITED)["stopReason"] == "end_turn"  # the parent went on
    seen = states(transcript)
    assert seen["Sleep in B"] == [{"state": "running"}, {"state": "idle", "stopReason": "cancelled"}]
    assert seen["Short A"] == [{"state": "running"}, {"state": "idle", "stopReason": "end_turn"}]
    # A cancel of the finished child and of an unknown id is logged; the session serves on.
    assert "already finished" in transcript.stderr and "no-such-session" in transcript.stderr
    assert len(transcript.result(LISTED)["sessions"]) == 1


async def test_embedded_cancel_of_one_child_stops_it_alone(tmp_path: Path) -> None:
    transcript = await drive(cancel_steps(tmp_path / "project"), env=embedded_env(tmp_path, SCRIPTS / "one_cancelled.yaml"),
                             folder=tmp_path, subagents=True)
    check_one_cancelled(transcript)


async def test_attached_cancel_of_one_child_stops_it_alone(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, forward_subagent_events=True, llm_api="scripted",
                                 llm_script=str(SCRIPTS / "one_cancelled.yaml"))
    async with taskwire_server(settings) as server:
        transcript = await drive(cancel_steps(tmp_path / "project"), env=embedded_env(tmp_path, "unused"),
                                 folder=tmp_path, command=[*TASKWIRE_ACP, "--url", server.url], subagents=True)
    check_one_cancelled(transcript)


def check_asking_children(transcript: Transcript, requests: dict[str, dict[str, Any]]) -> None:
    assert transcript.sdk_errors == [] and transcript.validated == transcript.raw
    assert transcript.result(2)["stopReason"] == "end_turn"
    children = {u["title"]: u["sessionId"] for u in transcript.updates() if u["sessionUpdate"] == "subagent_update" and "title" in u}
    asks = {ask["toolCall"]["rawInput"]["command"]: ask for ask in transcript.permissions}
    assert asks["echo from-a"]["sessionId"] == children["Work A"]  # asked on the child's own session
    assert asks["echo from-b"]["sessionId"] == children["Work B"]
    for title in ("Work A", "Work B"):
        assert states(transcript)[title] == [{"state": "running"}, {"state": "requires_action"}, {"state": "running"},
                                             {"state": "idle", "stopReason": "end_turn"}]
    # Shown waiting before the editor was asked.
    lines = transcript.lines
    for title, command in (("Work A", "echo from-a"), ("Work B", "echo from-b")):
        waiting = next(i for i, line in enumerate(lines) if line["kind"] == "raw"
                       and line["params"]["update"].get("state") == {"state": "requires_action"}
                       and line["params"]["update"]["sessionId"] == children[title])
        asked = next(i for i, line in enumerate(lines) if line["kind"] == "permission"
                     and line["params"]["toolCall"]["rawInput"]["command"] == command)
        assert waiting < asked
    a, b = requests["echo from-a"], requests["echo from-b"]
    assert (a["status"], b["status"]) == ("allowed", "rejected")


async def test_embedded_a_child_that_asks_is_shown_waiting_and_asked_on_its_session(tmp_path: Path) -> None:
    project = tmp_path / "project"
    async with serve_app(create_mock_app(SCRIPT)) as mock_url:
        transcript = await drive(asking_steps(project, asking_agent(mock_url)), env=embedded_env(tmp_path, tmp_path / "unused.yaml"),
                                 folder=tmp_path, permissions=ALLOW_A_REJECT_B, subagents=True)
    settings = isolated_settings(tmp_path, workspace_path=tmp_path / "store",
                                 database_url=f"sqlite:///{tmp_path / 'store' / 'taskwire.db'}")
    async with taskwire_server(settings) as server:
        requests = await answered(server, transcript.result(1)["sessionId"])
    check_asking_children(transcript, requests)


async def test_attached_a_child_that_asks_is_shown_waiting_and_asked_on_its_session(
    tmp_path: Path, forwarding_server: RunningServer
) -> None:
    async with serve_app(create_mock_app(SCRIPT)) as mock_url:
        transcript = await drive(asking_steps(tmp_path / "project", asking_agent(mock_url)), env=embedded_env(tmp_path, "unused"),
                                 folder=tmp_path, command=[*TASKWIRE_ACP, "--url", forwarding_server.url],
                                 permissions=ALLOW_A_REJECT_B, subagents=True)
        requests = await answered(forwarding_server, transcript.result(1)["sessionId"])
    check_asking_children(transcript, requests)


async def test_cancel_of_the_root_ends_every_child_idle_cancelled(tmp_path: Path) -> None:
    sleeping = {"match": {"sessionUpdate": "tool_call", "rawInput": {"command": "sleep 30"}}, "count": 2, "root": True}
    steps = [{"op": "initialize"}, {"op": "new", "cwd": str(tmp_path / "project")},
             {"op": "prompt", "text": "Sleep.", "cancel_on": sleeping}]
    transcript = await drive(steps, env=embedded_env(tmp_path, SCRIPTS / "cancelled.yaml"), folder=tmp_path, subagents=True)
    assert transcript.result(2)["stopReason"] == "cancelled"
    assert transcript.sdk_errors == [] and transcript.validated == transcript.raw
    seen = states(transcript)
    assert set(seen) == {"Nest a sleeper", "Sleep in B", "Sleep nested"}
    assert all(s[-1] == {"state": "idle", "stopReason": "cancelled"} for s in seen.values()), seen


async def test_a_loaded_session_shows_its_waiting_children_and_asks_on_their_sessions(
    tmp_path: Path, forwarding_server: RunningServer
) -> None:
    server = forwarding_server
    async with serve_app(create_mock_app(SCRIPT)) as mock_url:
        created = await server.client.post("/api/conversations", json={"agent": asking_agent(mock_url), "initial_message": "Go."})
        assert created.status_code in (200, 201), created.text
        cid = created.json()["id"]
        await wait_pending(server, cid, 2)
        load = [{"op": "initialize"}, {"op": "load", "session": cid, "cwd": str(tmp_path / "project")},
                {"op": "answered", "count": 2}]
        transcript = await drive(load, env=embedded_env(tmp_path, "unused"), folder=tmp_path,
                                 command=[*TASKWIRE_ACP, "--url", server.url], permissions=ALLOW_A_REJECT_B, subagents=True)
        transcript.result(2)
        await wait_for_status(server.client, cid, {"finished"})
    assert transcript.sdk_errors == [] and transcript.validated == transcript.raw
    children = {u["title"]: u["sessionId"] for u in transcript.updates() if u["sessionUpdate"] == "subagent_update" and "title" in u}
    asks = {ask["toolCall"]["rawInput"]["command"]: ask["sessionId"] for ask in transcript.permissions}
    assert asks == {"echo from-a": children["Work A"], "echo from-b": children["Work B"]}
    # After the load's answer each child is shown waiting for the editor, and can be cancelled.
    lines = transcript.lines
    answer = next(i for i, line in enumerate(lines) if line["kind"] == "answer" and line["id"] == 1)
    after = [line["params"]["update"] for line in lines[answer:] if line["kind"] == "raw"
             and line["params"]["update"]["sessionUpdate"] == "subagent_update"]
    current = {u["sessionId"]: u for u in after[:2]}
    assert set(current) == set(children.values())
    assert all(u["state"] == {"state": "requires_action"} and u["capabilities"] == {"cancel": {}} for u in current.values())
