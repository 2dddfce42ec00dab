"""``taskwire acp`` to an editor that declares ``clientCapabilities.subagents``: the real ACP SDK
client, through its unstable entry (whose zod schemas know ``subagent_update`` and
``session_message``), sees every sub-agent of the tree as a child session: announced on its
immediate parent first, its own updates under its id, its state kept, the delegation and the
answer as linked messages, the spawning ``task`` call hidden from the parent; a child cannot be
prompted or loaded; ``session/load`` announces the children again under the same ids and then
sends their current states. Embedded and attached (``--url``) alike."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.acp_agent.helpers import SCRIPTS, TASKWIRE_ACP, Transcript, drive, embedded_env
from tests.servers import isolated_settings, taskwire_server

PROMPT = "Run the demo."
NEW, PROMPTED, PROMPT_CHILD, LOAD_CHILD, LOADED, SETTLED = 1, 2, 3, 4, 5, 6
B = {"sessionUpdate": "subagent_update", "title": "Echo subagent-b"}
RFD_KINDS = ("subagent_update", "session_message", "session_message_chunk")


@dataclass
class Run:
    transcript: Transcript
    root: str

    def frames(self, step: int | None = None) -> list[dict[str, Any]]:
        """``session/update`` params as they came, of one step (or all)."""
        return [line["params"] for line in self.transcript.lines
                if line["kind"] == "update" and (step is None or line["step"] == step)]

    def announced(self, frames: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Each child's announcement (its first ``subagent_update``) with the session it came on."""
        found: dict[str, dict[str, Any]] = {}
        for frame in frames:
            update = frame["update"]
            if update["sessionUpdate"] == "subagent_update" and update["sessionId"] not in found:
                found[update["sessionId"]] = {**update, "on": frame["sessionId"]}
        return found


async def _run(folder: Path, mode: str) -> Run:
    project = folder / "project"
    steps = [
        {"op": "initialize"},
        {"op": "new", "cwd": str(project)},
        {"op": "prompt", "text": PROMPT},
        {"op": "prompt", "text": "Hello, child.", "session_of": {"match": B}, "stop_on_error": False},
        {"op": "load", "cwd": str(project), "session_of": {"match": B}, "stop_on_error": False},
        {"op": "load", "cwd": str(project)},
        # Three children end idle live, in the replay, and once more after the load's answer.
        {"op": "wait", "match": {"sessionUpdate": "subagent_update", "state": {"state": "idle"}}, "count": 9},
    ]
    script = SCRIPTS / "two_and_nested.yaml"
    if mode == "embedded":
        transcript = await drive(steps, env=embedded_env(folder, script), folder=folder, subagents=True)
    else:
        settings = isolated_settings(folder, forward_subagent_events=True, llm_script=str(script))
        async with taskwire_server(settings) as server:
            transcript = await drive(steps, env=embedded_env(folder, "unused"), folder=folder,
                                     command=[*TASKWIRE_ACP, "--url", server.url], subagents=True)
    return Run(transcript, transcript.result(NEW)["sessionId"])


@pytest.fixture(scope="module", params=["embedded", "attached"])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Run:
    return asyncio.run(_run(tmp_path_factory.mktemp(f"acp-children-{request.param}"), request.param))


def test_every_frame_validates_in_the_unstable_sdk_unchanged(run: Run) -> None:
    assert run.transcript.sdk_errors == []
    assert run.transcript.validated == run.transcript.raw
    assert {u["update"]["sessionUpdate"] for u in run.frames()} >= {"subagent_update", "session_message"}


def test_each_subagent_is_announced_on_its_immediate_parent_before_anything_names_it(run: Run) -> None:
    frames = run.frames(PROMPTED)
    announced = run.announced(frames)
    by_title = {a["title"]: a for a in announced.values()}
    assert set(by_title) == {"Nest a sub-agent", "Echo subagent-b", "Echo leaf"}
    nest, b, leaf = by_title["Nest a sub-agent"], by_title["Echo subagent-b"], by_title["Echo leaf"]
    assert nest["on"] == b["on"] == run.root and leaf["on"] == nest["sessionId"]  # depth 2 under its parent
    for child in announced.values():
        assert child["description"] == "general-purpose" and child["state"] == {"state": "running"}
        assert child["capabilities"] == {"cancel": {}}  # native sub-agents: taskwire can stop each alone
        first = next(i for i, f in enumerate(frames) if f["sessionId"] == child["sessionId"]
                     or child["sessionId"] in (f["update"].get("senderSessionId"), f["update"].get("recipientSessionId"))
                     or f["update"].get("sessionId") == child["sessionId"])
        assert frames[first]["update"]["sessionUpdate"] == "subagent_update"


def test_a_childs_updates_go_under_its_own_session_and_the_roots_under_the_root(run: Run) -> None:
    for frame in run.frames(PROMPTED):
        update = frame["update"]
        subagent = ((update.get("_meta") or {}).get("taskwire") or {}).get("subagentId")
        if update["sessionUpdate"] in RFD_KINDS:
            continue
        assert frame["sessionId"] == (subagent or run.root), update
    on_b = [f["update"] for f in run.frames(PROMPTED) if f["sessionId"] == run.announced(run.frames())[
        next(s for s, a in run.announced(run.frames()).items() if a["title"] == "Echo subagent-b")]["sessionId"]]
    assert [u["toolCallId"] for u in on_b if u["sessionUpdate"] == "tool_call"] == ["call_subb_0_0"]


def test_the_task_calls_are_hidden_and_become_linked_prompt_and_answer_messages(run: Run) -> None:
    frames = run.frames(PROMPTED)
    root_calls = {f["update"]["toolCallId"] for f in frames if f["update"]["sessionUpdate"] == "tool_call"
                  and f["sessionId"] == run.root}
    assert root_calls == {"call_main_0_0"}  # the two task calls are messages now
    all_calls = {f["update"]["toolCallId"] for f in frames if f["update"]["sessionUpdate"] in ("tool_call", "tool_call_update")}
    assert "call_suba_0_0" not in all_calls
    announced = {a["title"]: a for a in run.announced(frames).values()}
    b = announced["Echo subagent-b"]["sessionId"]
    messages = [(f["sessionId"], f["update"]) for f in frames if f["update"]["sessionUpdate"] == "session_message"]
    to_b = [(on, m) for on, m in messages if m["messageId"] == "call_main_1_1"]
    assert [on for on, _ in to_b] == [run.root, b]  # outgoing on the parent, incoming on the child
    for _, m in to_b:
        assert (m["senderSessionId"], m["recipientSessionId"]) == (run.root, b)
        assert m["content"] == [{"type": "text", "text": "Run `echo subagent-b` and report what it printed."}]
    assert to_b[0][1]["recipientMessageId"] == "call_main_1_1" and to_b[1][1]["senderMessageId"] == "call_main_1_1"
    reply = next(m for on, m in messages if m["messageId"] == "call_main_1_1:reply" and on == run.root)
    assert (reply["senderSessionId"], reply["recipientSessionId"]) == (b, run.root)
    assert reply["content"][0]["text"] == "subagent-b printed: subagent-b"


def test_each_child_ends_idle_end_turn_and_the_prompt_end_turn(run: Run) -> None:
    assert run.transcript.result(PROMPTED)["stopReason"] == "end_turn"
    states: dict[str, list[dict[str, Any]]] = {}
    for frame in run.frames(PROMPTED):
        update = frame["update"]
        if update["sessionUpdate"] == "subagent_update":
            states.setdefault(update["sessionId"], []).append(update["state"])
    assert len(states) == 3
    assert all(s == [{"state": "running"}, {"state": "idle", "stopReason": "end_turn"}] for s in states.values())


def test_a_finished_child_takes_no_prompt_and_cannot_be_loaded(run: Run) -> None:
    # A prompt on a child session is a message to that sub-agent: this one has ended.
    error = run.transcript.error(PROMPT_CHILD)
    assert error["code"] == -32602 and error["data"]["code"] == "subagent_not_running"
    error = run.transcript.error(LOAD_CHILD)
    assert error["code"] == -32602 and error["data"]["code"] == "subagent_conversation"


def test_load_announces_each_child_again_under_the_same_id_then_sends_its_current_state(run: Run) -> None:
    live = run.announced(run.frames(PROMPTED))
    lines = run.transcript.lines
    answer = max(i for i, line in enumerate(lines) if line["kind"] == "answer")  # the load's
    replay = [line["params"] for line in lines[:answer] if line["kind"] == "update" and line["step"] == LOADED]
    after = [line["params"] for line in lines[answer:] if line["kind"] == "update"]
    replayed = run.announced(replay)
    assert set(replayed) == set(live)
    for child_id, child in replayed.items():
        assert (child["on"], child["title"]) == (live[child_id]["on"], live[child_id]["title"])
        assert "capabilities" not in child  # replayed history offers no mutation
    assert {f["update"]["sessionId"]: f["update"]["state"] for f in after} == dict.fromkeys(live, {"state": "idle", "stopReason": "end_turn"})
    assert all("capabilities" not in f["update"] for f in after)  # finished: nothing left to cancel


async def test_with_forwarding_off_a_capable_editor_gets_the_flattened_main_agent_view(tmp_path: Path) -> None:
    steps = [{"op": "initialize"}, {"op": "new", "cwd": str(tmp_path / "project")}, {"op": "prompt", "text": PROMPT}]
    transcript = await drive(steps, env=embedded_env(tmp_path, SCRIPTS / "two_and_nested.yaml", forwarding=False),
                             folder=tmp_path, subagents=True)
    root = transcript.result(NEW)["sessionId"]
    assert transcript.result(PROMPTED)["stopReason"] == "end_turn"
    assert {params["sessionId"] for params in transcript.raw} == {root}
    assert not {params["update"]["sessionUpdate"] for params in transcript.raw} & set(RFD_KINDS)
    calls = {u["toolCallId"] for u in transcript.updates() if u["sessionUpdate"] == "tool_call"}
    assert calls == {"call_main_0_0", "call_main_1_0", "call_main_1_1"}  # no child: the task calls stay
