"""A sub-agent's work state and folder, as ``Tree`` keeps them and ``taskwire watch`` shows them."""

from __future__ import annotations

import io


from taskwire_client.terminal import Terminal, render
from taskwire_client import Tree
from taskwire.events import ActionEvent, ConversationStateUpdateEvent, SubagentFinishedEvent, SubagentStartedEvent
from tests.client.test_tree import stamped, stored


def shown(tree: Tree) -> str:
    out = io.StringIO()
    Terminal(out).draw(render(tree, live=True))
    return out.getvalue()


def test_a_subagent_waiting_for_a_person_is_shown_waiting_then_its_end() -> None:
    tree = Tree("root")
    tree.apply(stored(ActionEvent(tool_name="task", tool_call_id="L", arguments={"description": "Find it"})))
    tree.apply(stamped(SubagentStartedEvent(description="Find it", cwd="/repo/.claude/worktrees/x"), "s1", "L"))
    tree.apply(stamped(ConversationStateUpdateEvent(key="work_state", value={"state": "requires_action"}), "s1", "L"))
    sub = tree.subagents["s1"]
    assert sub.work_state == {"state": "requires_action"} and sub.cwd == "/repo/.claude/worktrees/x"
    assert "waiting for you" in shown(tree) and "in /repo/.claude/worktrees/x" in shown(tree)
    tree.apply(stamped(ConversationStateUpdateEvent(key="work_state", value={"state": "idle", "stop_reason": "cancelled"}), "s1", "L"))
    tree.apply(stamped(SubagentFinishedEvent(status="cancelled", result=""), "s1", "L"))
    assert sub.work_state == {"state": "idle", "stop_reason": "cancelled"} and "waiting for you" not in shown(tree)


def test_full_state_entries_carry_the_work_state() -> None:
    tree = Tree("root")
    tree.apply_full_state({"status": "running", "subagents": [
        {"subagent_id": "s1", "parent_tool_use_id": "L", "status": "running", "work_state": {"state": "requires_action"}}]})
    assert tree.subagents["s1"].work_state == {"state": "requires_action"}
