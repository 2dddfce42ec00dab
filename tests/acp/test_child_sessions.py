"""The subagents RFD's child sessions (claude-agent-acp with ``clientCapabilities.subagents``)
folded into the same tree as the flattened form: recorded transcripts through ``ChildSessions``."""

from __future__ import annotations

import json

import logging
from typing import Any

import pytest

from taskwire.acp.child_sessions import ChildSessions
from taskwire.acp.mapping import Action, FinishSubagent, SessionMapper, StartSubagent, SubagentWorkState
from taskwire.events import ACPToolCallEvent, MessageEvent
from taskwire.acp.toolcalls import text_of
from tests.acp.helpers import FIXTURE, HERE, NATIVE_CANCEL_FIXTURE, emitted, replay, replay_native, tool_events

AGENT_A, AGENT_B = "toolu_main_1_1_0007", "toolu_main_1_2_0008"
ROOT = "root-session"
FIXTURES = HERE / "fixtures"


def tree_of(actions: list[Action]) -> dict[str, Any]:
    """What a consumer sees of a turn, ids of the main agent's own calls aside: the sub-agents,
    their calls and messages, the Agent calls' last state, the main agent's message."""
    calls = {e.tool_call_id: e for e in tool_events(actions)}
    launches = {a.tool_call_id for a in actions if isinstance(a, StartSubagent)}

    def shown(event: ACPToolCallEvent) -> dict[str, Any]:
        return {"title": event.title, "status": event.status, "kind": event.tool_kind, "is_error": event.is_error,
                "parent": event.parent_tool_use_id, "content": event.content}

    return {
        "started": [(a.tool_call_id, a.lane, a.subagent_type, a.description) for a in actions if isinstance(a, StartSubagent)],
        "finished": sorted((a.tool_call_id, a.status, a.result) for a in actions if isinstance(a, FinishSubagent)),
        "subagent_calls": {k: shown(v) for k, v in calls.items() if v.parent_tool_use_id is not None},
        "agent_calls": {k: {**shown(v), "prompt": v.raw_input.get("prompt"), "type": v.raw_input.get("subagent_type"),
                            "description": v.raw_input.get("description")} for k, v in calls.items() if k in launches},
        "main_calls": sorted((v.title, v.status) for k, v in calls.items() if v.parent_tool_use_id is None and k not in launches),
        # The flattened recording did not ask for sub-agents' own text (the child-session form
        # always sends it): the prompts and the main agent's message are compared.
        "messages": [(e.role, e.parent_tool_use_id, e.content) for e in emitted(actions)
                     if isinstance(e, MessageEvent) and (e.role == "user" or e.parent_tool_use_id is None)],
    }


def states(actions: list[Action], launch: str) -> list[dict[str, Any]]:
    return [a.value for a in actions if isinstance(a, SubagentWorkState) and a.tool_call_id == launch]


def announce(child: str, title: str = "Echo a", **fields: Any) -> dict[str, Any]:
    update = {"sessionUpdate": "subagent_update", "sessionId": child, "title": title, "description": "general-purpose",
              "capabilities": {"cancel": {}}, "state": {"state": "running"}, **fields}
    return {"sessionId": ROOT, "update": update}


def delegate(child: str, launch: str, text: str = "run echo a") -> dict[str, Any]:
    return {"sessionId": ROOT, "update": {"sessionUpdate": "session_message", "messageId": launch, "senderSessionId": ROOT,
                                          "recipientSessionId": child, "recipientMessageId": launch,
                                          "content": [{"type": "text", "text": text}]}}


def on_child(child: str, update: dict[str, Any]) -> dict[str, Any]:
    return {"sessionId": child, "update": update}


def child_call(call_id: str, launch: str | None, **fields: Any) -> dict[str, Any]:
    meta = {"_meta": {"claudeCode": {"toolName": "Bash", "parentToolUseId": launch}}} if launch else {}
    return {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": "echo a", "kind": "execute", "status": "pending", **meta, **fields}


def sessions() -> ChildSessions:
    children = ChildSessions(SessionMapper())
    children.root_session_id = ROOT
    children.mapper.begin_turn()
    return children


def test_child_sessions_make_the_same_tree_as_the_flattened_form() -> None:
    flattened, _ = replay()
    native, children = replay_native()
    assert children.active
    flat_tree, native_tree = tree_of(flattened), tree_of(native)
    for key in ("started", "finished", "subagent_calls", "main_calls", "messages"):
        assert native_tree[key] == flat_tree[key], key
    for launch in (AGENT_A, AGENT_B):
        ours, theirs = native_tree["agent_calls"][launch], flat_tree["agent_calls"][launch]
        # The flattened form's content starts as the prompt, then the answer: the last shows the answer.
        assert {k: ours[k] for k in ("title", "status", "kind", "is_error", "parent", "prompt", "type", "description")} == \
            {k: theirs[k] for k in ("title", "status", "kind", "is_error", "parent", "prompt", "type", "description")}
        assert ours["content"] == theirs["content"]


def test_the_real_three_subagent_runs_make_the_same_tree_in_both_forms() -> None:
    native, children = replay_native(FIXTURES / "real_three_subagents_auto.acp.jsonl")
    flattened, _ = replay(FIXTURES / "real_three_subagents_off.acp.jsonl")
    assert len(children.children) == 3
    ours, theirs = tree_of(native), tree_of(flattened)
    for calls in (ours["agent_calls"], theirs["agent_calls"]):  # one answer, split in blocks or not
        for call in calls.values():
            call["content"] = text_of(call["content"])
    assert ours == theirs


def test_the_real_cancel_of_one_of_three_ends_only_that_one() -> None:
    actions, children = replay_native(FIXTURES / "real_cancel_one.acp.jsonl")
    finished = {a.tool_call_id: a.status for a in actions if isinstance(a, FinishSubagent)}
    assert sorted(finished.values()) == ["cancelled", "completed", "completed"]
    cancelled = next(k for k, v in finished.items() if v == "cancelled")
    assert states(actions, cancelled)[-1] == {"state": "idle", "stop_reason": "cancelled"}


def test_each_child_reports_running_then_idle_end_turn() -> None:
    actions, _ = replay_native()
    for launch in (AGENT_A, AGENT_B):
        assert states(actions, launch) == [{"state": "running"}, {"state": "idle", "stop_reason": "end_turn"}]
        start = next(i for i, a in enumerate(actions) if isinstance(a, StartSubagent) and a.tool_call_id == launch)
        first = next(i for i, a in enumerate(actions) if isinstance(a, SubagentWorkState) and a.tool_call_id == launch)
        assert start < first  # a state goes to a sub-agent that exists


def test_a_child_cancelled_alone_ends_cancelled_while_its_sibling_finishes() -> None:
    actions, children = replay_native(NATIVE_CANCEL_FIXTURE)
    finished = {a.tool_call_id: a.status for a in actions if isinstance(a, FinishSubagent)}
    assert finished == {AGENT_A: "cancelled", AGENT_B: "completed"}
    assert states(actions, AGENT_A) == [
        {"state": "running"}, {"state": "requires_action"}, {"state": "running"}, {"state": "idle", "stop_reason": "cancelled"},
    ]
    assert {"state": "requires_action"} in states(actions, AGENT_B)
    calls = {e.tool_call_id: e for e in tool_events(actions)}
    assert calls[AGENT_A].status == "cancelled" and calls[AGENT_B].status == "completed"
    assert calls["toolu_subagenta_0_0_0014"].status == "failed"
    assert calls["toolu_subagenta_0_0_0014"].parent_tool_use_id == AGENT_A
    # The children's permission requests are filed under their launches.
    assert children.mapper.call("toolu_subagentb_0_0_0012").parent == AGENT_B
    assert all(c.cancellable for c in children.children.values())


def test_a_peer_that_never_announces_a_child_passes_through_unchanged() -> None:
    flattened, _ = replay()
    actions, children = replay_native(FIXTURE)  # the flattened recording, through ChildSessions
    assert tree_of(actions) == tree_of(flattened) and not children.active


def test_a_childs_cwd_reaches_its_start() -> None:
    children = sessions()
    actions = children.receive(announce("C", cwd="/repo/.claude/worktrees/x")) + children.receive(delegate("C", "L"))
    start = next(a for a in actions if isinstance(a, StartSubagent))
    assert (start.tool_call_id, start.cwd, start.description) == ("L", "/repo/.claude/worktrees/x", "Echo a")


def test_a_state_patch_for_an_unknown_child_is_skipped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    children = sessions()
    with caplog.at_level(logging.WARNING):
        actions = children.receive({"sessionId": ROOT, "update": {"sessionUpdate": "subagent_update", "sessionId": "ghost",
                                                                   "state": {"state": "idle", "stopReason": "end_turn"}}})
    assert actions == [] and "never announced" in caplog.text


def test_a_session_message_naming_nobody_is_skipped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    children = sessions()
    with caplog.at_level(logging.WARNING):
        assert children.receive(delegate("nobody", "L")) == []
        assert children.receive({"sessionId": ROOT, "update": {"sessionUpdate": "session_message", "messageId": "X:reply",
                                                                "content": [{"type": "text", "text": "hi"}]}}) == []
    assert "names no known session" in caplog.text and "answers no known launch" in caplog.text


def test_a_child_frame_before_its_announcement_is_held_then_placed() -> None:
    children = sessions()
    assert children.receive(on_child("C", child_call("c1", None))) == []  # nowhere to put it yet
    actions = children.receive(announce("C")) + children.receive(delegate("C", "L"))
    calls = [e for e in tool_events(actions) if e.tool_call_id == "c1"]
    assert len(calls) == 1 and calls[0].parent_tool_use_id == "L"  # stamped with its launch
    start = next(i for i, a in enumerate(actions) if isinstance(a, StartSubagent))
    assert start < actions.index(next(a for a in actions if getattr(a, "event", None) is calls[0]))


def test_a_child_frame_naming_its_launch_places_the_child_before_the_prompt_comes() -> None:
    children = sessions()
    children.receive(announce("C"))
    actions = children.receive(on_child("C", child_call("c1", "L")))
    assert [a.tool_call_id for a in actions if isinstance(a, StartSubagent)] == ["L"]
    prompts = [e for e in emitted(children.receive(delegate("C", "L"))) if isinstance(e, MessageEvent)]
    assert [(p.role, p.content, p.parent_tool_use_id) for p in prompts] == [("user", "run echo a", "L")]


def test_frames_of_a_session_never_announced_are_kept_when_they_name_their_launch(caplog: pytest.LogCaptureFixture) -> None:
    children = sessions()
    children.receive(on_child("X", child_call("x1", "L")))
    children.receive(on_child("X", child_call("x2", None)))
    with caplog.at_level(logging.WARNING):
        actions = children.end_turn()
    assert [e.tool_call_id for e in tool_events(actions)] == ["x1"]
    assert "never placed" in caplog.text


def test_an_error_end_keeps_the_message_and_fails_the_launch() -> None:
    children = sessions()
    children.receive(announce("C"))
    children.receive(delegate("C", "L"))
    ended = children.receive({"sessionId": ROOT, "update": {"sessionUpdate": "subagent_update", "sessionId": "C", "state": {
        "state": "idle", "stopReason": "error", "error": {"code": -32603, "message": "model overloaded"}}}})
    ended += children.receive({"sessionId": ROOT, "update": {"sessionUpdate": "agent_message_chunk",
                                                              "content": {"type": "text", "text": "hm"}}})
    assert states(ended, "L") == [{"state": "idle", "stop_reason": "error", "error": "model overloaded"}]
    finished = next(a for a in ended if isinstance(a, FinishSubagent))
    assert finished.status == "error" and finished.result == "model overloaded"


def test_a_state_after_the_end_does_not_reopen_the_child() -> None:
    children = sessions()
    children.receive(announce("C"))
    children.receive(delegate("C", "L"))
    children.receive({"sessionId": ROOT, "update": {"sessionUpdate": "subagent_update", "sessionId": "C",
                                                     "state": {"state": "idle", "stopReason": "end_turn"}}})
    children.end_turn()
    again = children.receive({"sessionId": ROOT, "update": {"sessionUpdate": "subagent_update", "sessionId": "C",
                                                             "state": {"state": "running"}}})
    assert again == [] and children.live() == []


def test_a_load_replay_teaches_each_child_its_launch_and_maps_nothing_again() -> None:
    # The real restart: a first adapter's live run, then a second one's session/load replay.
    lines = [json.loads(line) for line in (FIXTURES / "real_restart.acp.jsonl").read_text().splitlines()]
    load = next(i for i, entry in enumerate(lines) if entry["msg"].get("method") == "session/load")
    answered = next(i for i, entry in enumerate(lines) if i > load and entry["msg"].get("id") == lines[load]["msg"]["id"])
    live = ChildSessions(SessionMapper())
    for entry in lines[:load]:
        if entry["dir"] == "agent->client" and entry["msg"].get("method") == "session/update":
            live.root_session_id = live.root_session_id or entry["msg"]["params"]["sessionId"]
            live.receive(entry["msg"]["params"])
    reopened = ChildSessions(SessionMapper())
    reopened.root_session_id = lines[load]["msg"]["params"]["sessionId"]
    replay = [e["msg"]["params"] for e in lines[load:answered] if e["msg"].get("method") == "session/update"]
    reopened.learn(replay)
    assert {c.session_id: c.launch_id for c in reopened.children.values()} == \
        {c.session_id: c.launch_id for c in live.children.values()}
    assert len(reopened.children) == 2 and reopened.live() == []
    # Its states after the load are taken in without reopening the ended children.
    after = reopened.receive({"sessionId": reopened.root_session_id, "update": {
        "sessionUpdate": "subagent_update", "sessionId": next(iter(reopened.children)), "state": {"state": "idle", "stopReason": "end_turn"}}})
    assert after == []
