"""A sub-agent's messages (non-null ``parent_tool_use_id``) never become the main agent's.

Each test puts a sidechain message exactly where the old adapters had no check: while the
parent's text or tool block with the same index is open, after the parent's result, as stream
events (older CLIs), and from two sub-agents at once.
"""

from __future__ import annotations

from taskwire.claude_sdk import ROOT, TurnEnded
from taskwire.events import ACPToolCallEvent, SubagentFinishedEvent, SubagentStartedEvent
from tests.claude_sdk.sdk_messages import (
    DispatchLog,
    agent_call,
    agent_launched,
    agent_returned,
    assistant,
    block_stop,
    content_text,
    json_delta,
    message_end,
    message_start,
    result,
    streamed_call,
    task_notification,
    task_started,
    text,
    text_delta,
    text_start,
    tool_result,
    tool_start,
    tool_use,
    user,
)

AGENT = "toolu_agent"


def open_subagent(session: DispatchLog, call_id: str = AGENT, index: int = 0, message_id: str = "msg_main_0") -> None:
    """The main agent streams and completes an ``Agent`` call; Claude Code starts its task."""
    session.feed(
        *streamed_call(index, agent_call(call_id, f"Sub-agent {call_id}", f"prompt of {call_id}"), message_id=message_id),
        task_started(call_id, f"task-{call_id}", f"Sub-agent {call_id}"),
        user(f"prompt of {call_id}", parent=call_id),
    )


def test_sidechain_text_never_reaches_the_parents_message_or_deltas(session: DispatchLog) -> None:
    prompt = session.begin()
    session.feed(message_start("msg_main_0"))
    open_subagent(session)
    session.feed(
        *message_end(stop_reason="tool_use"),
        message_start("msg_main_1"),
        text_start(0),
        text_delta(0, "The sub-agent "),
        # The sub-agent speaks while the parent's text block 0 is open.
        assistant(text("SUB-AGENT PROSE"), message_id="msg_sub_0", parent=AGENT),
        text_delta(0, "is done."),
        assistant(text("The sub-agent is done."), message_id="msg_main_1"),
        block_stop(0),
        *message_end(),
        agent_returned(AGENT, "its report"),
        result("The sub-agent is done.", prompt),
    )

    assert session.messages(ROOT) == ["The sub-agent is done."]
    assert session.deltas(ROOT) == "The sub-agent is done."
    assert not any("SUB-AGENT" in event.to_json() for event in session.events(ROOT))
    assert session.messages(AGENT) == ["SUB-AGENT PROSE"]
    assert session.turn_ends() == [TurnEnded("The sub-agent is done.")]


def test_sidechain_stream_events_are_partitioned_by_lane(session: DispatchLog) -> None:
    # Older Claude Code versions stream sub-agents too; both lanes number blocks from 0.
    prompt = session.begin()
    session.feed(message_start("msg_main_0"))
    open_subagent(session, index=1)
    session.feed(
        text_start(2),
        text_delta(2, "parent "),
        message_start("msg_sub_0", parent=AGENT),
        text_start(0, parent=AGENT),
        text_delta(0, "child ", parent=AGENT),
        text_start(2, parent=AGENT),
        text_delta(2, "child-again", parent=AGENT),
        block_stop(2, parent=AGENT),  # closes the sub-agent's block 2, not the parent's
        *message_end(AGENT),
        text_delta(2, "text"),
        assistant(text("parent text"), message_id="msg_main_0"),
        block_stop(2),
        *message_end(),
        result("parent text", prompt),
    )

    assert session.deltas(ROOT) == "parent text"
    assert session.deltas(AGENT) == "child child-again"


def test_sidechain_tool_at_the_parents_block_index_corrupts_nothing(session: DispatchLog) -> None:
    prompt = session.begin()
    session.feed(message_start("msg_main_0"))
    open_subagent(session, index=1)
    session.feed(
        # The parent's second call of the same response is in flight at block 2 ...
        tool_start(2, "toolu_parent", "Bash"),
        json_delta(2, '{"command": "echo pa'),
        # ... when the sub-agent streams its own call, also at block 2.
        message_start("msg_sub_0", parent=AGENT),
        tool_start(2, "toolu_child", "Bash", parent=AGENT),
        json_delta(2, '{"command": "echo child"}', parent=AGENT),
        assistant(tool_use("toolu_child", "Bash", command="echo child"), message_id="msg_sub_0", parent=AGENT),
        block_stop(2, parent=AGENT),
        *message_end(AGENT, stop_reason="tool_use"),
        json_delta(2, 'rent"}'),
        assistant(tool_use("toolu_parent", "Bash", command="echo parent"), message_id="msg_main_0"),
        block_stop(2),
        *message_end(stop_reason="tool_use"),
        user(tool_result("toolu_child", "child"), parent=AGENT),
        user(tool_result("toolu_parent", "parent-output"), tool_use_result={"stdout": "parent-output"}),
        assistant(text("child done"), message_id="msg_sub_1", parent=AGENT),
        agent_returned(AGENT, "child done"),
        assistant(text("All done."), message_id="msg_main_1"),
        result("All done.", prompt),
    )

    parent_call = session.call(ROOT, "toolu_parent")
    assert session.statuses(ROOT, "toolu_parent") == ["pending", "in_progress", "completed"]
    assert parent_call.raw_input == {"command": "echo parent"}
    assert content_text(parent_call) == "parent-output"
    assert parent_call.raw_output == {"stdout": "parent-output"}
    root_calls = {e.tool_call_id for e in session.events(ROOT) if isinstance(e, ACPToolCallEvent)}
    assert root_calls == {AGENT, "toolu_parent"}
    assert session.statuses(AGENT, "toolu_child") == ["pending", "in_progress", "completed"]
    assert session.turn_ends() == [TurnEnded("All done.")]


def test_parallel_sidechains_interleave_with_the_parents_open_stream(session: DispatchLog) -> None:
    prompt = session.begin()
    session.feed(
        message_start("msg_main_0"),
        text_start(0),
        text_delta(0, "Two sub-agents."),
        assistant(text("Two sub-agents."), message_id="msg_main_0"),
        block_stop(0),
        tool_start(1, "toolu_a", "Agent"),
        assistant(agent_call("toolu_a", "Echo a", "run echo a"), message_id="msg_main_0"),
        block_stop(1),
        task_started("toolu_a", "task-a", "Echo a"),
        tool_start(2, "toolu_b", "Agent"),
        user("run echo a", parent="toolu_a"),  # sub-agent a starts while the parent streams b
        json_delta(2, '{"description": "Echo b"'),
        assistant(tool_use("toolu_a_bash", "Bash", command="echo a"), message_id="msg_a_0", parent="toolu_a"),
        assistant(agent_call("toolu_b", "Echo b", "run echo b"), message_id="msg_main_0"),
        block_stop(2),
        task_started("toolu_b", "task-b", "Echo b"),
        user("run echo b", parent="toolu_b"),
        *message_end(stop_reason="tool_use"),
        assistant(tool_use("toolu_b_bash", "Bash", command="echo b"), message_id="msg_b_0", parent="toolu_b"),
        user(tool_result("toolu_b_bash", "b"), parent="toolu_b"),
        user(tool_result("toolu_a_bash", "a"), parent="toolu_a"),
        assistant(text("b printed b"), message_id="msg_b_1", parent="toolu_b"),
        assistant(text("a printed a"), message_id="msg_a_1", parent="toolu_a"),
        task_notification("toolu_b", "task-b", "b printed b"),
        agent_returned("toolu_b", "b printed b"),
        task_notification("toolu_a", "task-a", "a printed a"),
        agent_returned("toolu_a", "a printed a"),
        message_start("msg_main_1"),
        text_start(0),
        text_delta(0, "Both done."),
        assistant(text("Both done."), message_id="msg_main_1"),
        block_stop(0),
        *message_end(),
        result("Both done.", prompt),
    )

    assert session.messages(ROOT) == ["Two sub-agents.", "Both done."]
    assert session.deltas(ROOT) == "Two sub-agents.Both done."
    root_calls = {e.tool_call_id: e.status for e in session.events(ROOT) if isinstance(e, ACPToolCallEvent)}
    assert root_calls == {"toolu_a": "completed", "toolu_b": "completed"}
    for lane, letter in (("toolu_a", "a"), ("toolu_b", "b")):
        assert session.kinds(lane) == [
            "SubagentStartedEvent", "MessageEvent", "ACPToolCallEvent", "ACPToolCallEvent",
            "MessageEvent", "SubagentFinishedEvent",
        ]
        assert session.messages(lane, role="user") == [f"run echo {letter}"]
        assert session.messages(lane) == [f"{letter} printed {letter}"]
        assert session.statuses(lane, f"toolu_{letter}_bash") == ["in_progress", "completed"]
        finished = session.events(lane)[-1]
        assert isinstance(finished, SubagentFinishedEvent)
        assert (finished.status, finished.result) == ("completed", f"{letter} printed {letter}")
    assert session.lanes() == {ROOT, "toolu_a", "toolu_b"}
    assert session.turn_ends() == [TurnEnded("Both done.")]


def test_sidechain_message_after_the_result_creates_no_turn(session: DispatchLog) -> None:
    prompt = session.begin()
    session.feed(
        assistant(agent_call(AGENT, "In the background", "work", background=True), message_id="msg_main_0"),
        task_started(AGENT, "task-bg", "In the background"),
        agent_launched(AGENT),
        assistant(text("Started it."), message_id="msg_main_1"),
        result("Started it.", prompt),
    )
    assert session.turn_ends() == [TurnEnded("Started it.")]
    before = len(session.events(ROOT))

    # The background sub-agent goes on after the parent's result.
    session.feed(
        user("work", parent=AGENT),
        assistant(tool_use("toolu_bg_bash", "Bash", command="sleep 1"), message_id="msg_bg_0", parent=AGENT),
        user(tool_result("toolu_bg_bash", ""), parent=AGENT),
        assistant(text("background work done"), message_id="msg_bg_1", parent=AGENT),
        task_notification(AGENT, "task-bg", "background work done"),
    )

    assert not session.dispatcher.turn_active
    assert session.turn_ends() == [TurnEnded("Started it.")]
    assert len(session.events(ROOT)) == before
    assert session.messages(AGENT) == ["background work done"]
    assert session.statuses(AGENT, "toolu_bg_bash") == ["in_progress", "completed"]
    assert isinstance(session.events(AGENT)[-1], SubagentFinishedEvent)
    # The next prompt gets a turn of its own, untouched by what came in between.
    session.begin("prompt-2")
    session.feed(assistant(text("Next."), message_id="msg_main_2"), result("Next.", "prompt-2"))
    assert session.turn_ends()[-1] == TurnEnded("Next.")


def test_each_subagent_starts_and_finishes_once_with_its_own_usage(session: DispatchLog) -> None:
    prompt = session.begin()
    open_subagent(session)
    session.feed(
        task_started(AGENT, f"task-{AGENT}", "again"),  # already started by its call: no second start
        assistant(text("sub answer"), message_id="msg_sub_0", parent=AGENT),
        assistant(text("sub answer, same message"), message_id="msg_sub_0", parent=AGENT),
        task_notification(AGENT, f"task-{AGENT}", "sub answer"),
        agent_returned(AGENT, "sub answer"),  # already finished by the notification
        result("done", prompt),
    )

    events = session.events(AGENT)
    assert [type(e) for e in events].count(SubagentStartedEvent) == 1
    assert [type(e) for e in events].count(SubagentFinishedEvent) == 1
    started = events[0]
    assert isinstance(started, SubagentStartedEvent)
    assert (started.subagent_type, started.description) == ("general-purpose", f"Sub-agent {AGENT}")
    finished = events[-1]
    assert isinstance(finished, SubagentFinishedEvent) and finished.usage is not None
    # One model message, reported twice: counted once.
    assert (finished.usage.llm_calls, finished.usage.input_tokens) == (1, 100)
    assert [u.usage for u in session.usage(AGENT)] == [finished.usage]
    root_usage = session.usage(ROOT)[-1].usage
    assert (root_usage.input_tokens, root_usage.output_tokens) == (300, 30)


def test_a_subagents_own_subagent_is_nested_under_its_lane(session: DispatchLog) -> None:
    session.begin()
    open_subagent(session)
    session.feed(
        assistant(agent_call("toolu_inner", "Inner", "inner work"), message_id="msg_sub_0", parent=AGENT),
        user("inner work", parent="toolu_inner"),
        assistant(text("inner done"), message_id="msg_inner_0", parent="toolu_inner"),
    )

    assert session.dispatcher.parent_lane("toolu_inner") == AGENT
    assert session.dispatcher.parent_lane(AGENT) == ROOT
    assert "toolu_inner" in {e.tool_call_id for e in session.events(AGENT) if isinstance(e, ACPToolCallEvent)}
    assert session.messages("toolu_inner") == ["inner done"]
    assert not any(isinstance(e, ACPToolCallEvent) and e.tool_call_id == "toolu_inner" for e in session.events(ROOT))
