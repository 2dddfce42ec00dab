"""``ChildSessionProjection`` on its own (Sans-I/O): what odd or partial feeds make of child sessions. No
frame is lost or put under the wrong session, a peer's sub-agent offers no cancel, a peer's
``work_state`` report is honoured, a launch that started no child is still shown."""

from __future__ import annotations

from typing import Any

from taskwire.acp.child_session_projection import ChildSessionProjection
from taskwire.acp.projection import ACPProjection
from taskwire.acp.updates import Output, Settled, Update

ROOT = "root"


class Feed:
    def __init__(self, *, hold_launches: bool = True) -> None:
        self.projection = ACPProjection()
        self.children = ChildSessionProjection(ROOT, hold_launches=hold_launches)
        self.seq = 0

    def __call__(self, kind: str, **fields: Any) -> list[Output]:
        self.seq += 1
        event = {"kind": kind, "seq": self.seq, **fields}
        return self.children.route(event, self.projection.receive(event))


def sub(subagent: str, launch: str) -> dict[str, str]:
    return {"subagent_id": subagent, "parent_tool_use_id": launch}


def kinds(outputs: list[Output]) -> list[tuple[str | None, str]]:
    return [(o.session_id, o.payload["sessionUpdate"]) for o in outputs if isinstance(o, Update)]


def test_a_frame_of_a_subagent_never_announced_stays_on_the_root_stamped() -> None:
    feed = Feed()
    out = feed("ActionEvent", tool_name="terminal", tool_call_id="c1", arguments={"command": "ls"}, **sub("ghost", "t1"))
    assert kinds(out) == [(None, "tool_call"), (None, "tool_call_update")]
    assert out[0].payload["_meta"]["taskwire"]["subagentId"] == "ghost"  # type: ignore[union-attr]
    assert feed("SubagentFinishedEvent", status="completed", result="x", **sub("ghost", "t1")) == []


def test_a_second_start_of_the_same_subagent_announces_nothing_more() -> None:
    feed = Feed()
    feed("ActionEvent", tool_name="task", tool_call_id="t1", arguments={"description": "D", "prompt": "P"})
    first = feed("SubagentStartedEvent", description="D", **sub("s1", "t1"))
    assert kinds(first) == [(None, "subagent_update"), (None, "session_message"), ("s1", "session_message")]
    assert feed("SubagentStartedEvent", description="D", **sub("s1", "t1")) == []


def test_a_peers_subagent_has_no_cancel_and_its_work_state_report_is_sent() -> None:
    feed = Feed()
    feed("ACPToolCallEvent", tool_call_id="toolu_1", title="Task", tool_kind="think", status="pending",
         raw_input={"subagent_type": "general-purpose", "prompt": "Look."})
    announced = feed("SubagentStartedEvent", description="Look", **sub("s1", "toolu_1"))
    assert "capabilities" not in announced[0].payload  # type: ignore[union-attr]
    reported = feed("ConversationStateUpdateEvent", key="work_state",
                    value={"state": "idle", "stop_reason": "error", "error": {"message": "boom"}}, **sub("s1", "toolu_1"))
    assert reported[-1].payload == {"sessionUpdate": "subagent_update", "sessionId": "s1",  # type: ignore[union-attr]
                                    "state": {"state": "idle", "stopReason": "error", "error": {"code": -32603, "message": "boom"}}}


def test_a_failed_subagent_ends_idle_error_with_its_reason_and_no_answer() -> None:
    feed = Feed()
    feed("ActionEvent", tool_name="task", tool_call_id="t1", arguments={"description": "D", "prompt": "P"})
    feed("SubagentStartedEvent", description="D", **sub("s1", "t1"))
    out = feed("SubagentFinishedEvent", status="error", result="the model failed", **sub("s1", "t1"))
    assert [o.payload for o in out] == [{"sessionUpdate": "subagent_update", "sessionId": "s1",  # type: ignore[union-attr]
                                         "state": {"state": "idle", "stopReason": "error",
                                                   "error": {"code": -32603, "message": "the model failed"}}}]


def test_a_task_call_that_starts_no_subagent_is_shown_at_its_end() -> None:
    feed = Feed()
    assert feed("ActionEvent", tool_name="task", tool_call_id="t1", arguments={"description": "D", "prompt": "P"}) == []
    out = feed("ObservationEvent", tool_name="task", tool_call_id="t1", content="unknown sub-agent type", is_error=True)
    assert [(o.payload["sessionUpdate"], o.payload.get("status")) for o in out] == [  # type: ignore[union-attr]
        ("tool_call", "pending"), ("tool_call_update", "in_progress"), ("tool_call_update", "failed")]


def test_without_forwarded_subagent_events_task_calls_are_never_held() -> None:
    feed = Feed(hold_launches=False)
    out = feed("ActionEvent", tool_name="task", tool_call_id="t1", arguments={"description": "D", "prompt": "P"})
    assert kinds(out) == [(None, "tool_call"), (None, "tool_call_update")]


def test_a_settled_request_nobody_was_asked_about_passes_through() -> None:
    feed = Feed()
    assert feed.children.route({"kind": "X"}, [Settled("r9")]) == [Settled("r9")]


def test_a_subagent_in_its_own_folder_is_announced_with_it_and_one_in_its_parents_without() -> None:
    feed = Feed()
    feed.children.workspace = "/repo"
    away = feed("SubagentStartedEvent", description="W", cwd="/repo/.claude/worktrees/w", **sub("s1", "t1"))
    home = feed("SubagentStartedEvent", description="H", cwd="/repo", **sub("s2", "t2"))
    assert away[0].payload["cwd"] == "/repo/.claude/worktrees/w"  # type: ignore[union-attr]
    assert "cwd" not in home[0].payload  # type: ignore[union-attr]


def test_a_peers_child_reported_cancellable_is_offered_cancel_once_and_not_while_replaying() -> None:
    feed = Feed()
    feed("ACPToolCallEvent", tool_call_id="toolu_1", title="Task", tool_kind="think", status="pending",
         raw_input={"subagent_type": "general-purpose", "prompt": "Look."})
    feed("SubagentStartedEvent", description="Look", **sub("s1", "toolu_1"))
    live = feed("ConversationStateUpdateEvent", key="work_state", value={"state": "running", "cancellable": True},
                **sub("s1", "toolu_1"))
    assert live[-1].payload == {"sessionUpdate": "subagent_update", "sessionId": "s1",  # type: ignore[union-attr]
                                "state": {"state": "running"}, "capabilities": {"cancel": {}}}
    assert feed.children.child("s1").cancellable  # type: ignore[union-attr]
    again = feed("ConversationStateUpdateEvent", key="work_state", value={"state": "requires_action", "cancellable": True},
                 **sub("s1", "toolu_1"))
    assert "capabilities" not in again[-1].payload  # type: ignore[union-attr]

    replay = Feed()
    replay("ACPToolCallEvent", tool_call_id="toolu_1", title="Task", tool_kind="think", status="pending",
           raw_input={"subagent_type": "general-purpose", "prompt": "Look."})
    replay.seq += 1
    replay.children.route({"kind": "SubagentStartedEvent", "seq": replay.seq, "description": "Look", **sub("s1", "toolu_1")},
                          [], replaying=True)
    replay.seq += 1
    replayed = replay.children.route({"kind": "ConversationStateUpdateEvent", "seq": replay.seq, "key": "work_state",
                                      "value": {"state": "running", "cancellable": True}, **sub("s1", "toolu_1")},
                                     [], replaying=True)
    assert "capabilities" not in replayed[-1].payload  # type: ignore[union-attr]
    assert replay.children.current_states()[0].payload["capabilities"] == {"cancel": {}}
