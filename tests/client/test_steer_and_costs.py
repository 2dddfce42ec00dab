"""The client library steers a sub-agent, and its ``Tree`` (what ``taskwire watch`` draws) keeps
each sub-agent's own cost, its subtree's, the tree's total and a budget's stop, live."""

from __future__ import annotations

import io
from pathlib import Path

from taskwire_client import Client, APIError, Tree
from taskwire_client.terminal import Terminal, render
from taskwire.events import ConversationStateUpdateEvent, SubagentFinishedEvent, SubagentStartedEvent, Usage
from tests.api.steering import gated_script, gated_tree, subagent_waiting, user_texts
from tests.client.test_tree import stamped, stored


def shown(tree: Tree) -> str:
    out = io.StringIO()
    Terminal(out).draw(render(tree, live=False))
    return out.getvalue()


async def test_the_client_steers_a_subagent_and_its_tree_shows_the_costs_live(tmp_path: Path) -> None:
    async with gated_tree(tmp_path, gated_script(tmp_path / "gate"), forward_subagent_events=True) as setup:
        async with Client(setup.server.url) as client:
            cid = await setup.start()
            sid = await subagent_waiting(setup.server, cid)
            stored_event = await client.steer_subagent(cid, sid, "Please also count the files.")
            assert stored_event["kind"] == "MessageEvent" and stored_event["subagent_id"] == sid
            setup.open_gate()
            tree = Tree(cid)
            async for event in client.events(cid, after_seq=0, until_run_ends=True):
                tree.apply(event)
            try:
                await client.steer_subagent(cid, sid, "too late")
            except APIError as refused:
                assert refused.status == 409 and refused.code == "subagent_not_running"
            else:
                raise AssertionError("an ended sub-agent took a message")
            listed = {e["subagent_id"]: e for e in await client.subagents(cid)}
    sub = tree.subagents[sid]
    assert sub.usage is not None and sub.usage.cost_usd == listed[sid]["usage"]["cost_usd"] > 0
    assert tree.subtree_usage(sub) == sub.usage  # it has no sub-agent of its own
    assert tree.tree_usage is not None and tree.tree_usage.llm_calls == 4
    assert tree.tree_usage.cost_usd == round(tree.usage.cost_usd + sub.usage.cost_usd, 12)  # type: ignore[union-attr, operator]
    text = shown(tree)
    assert f"${sub.usage.cost_usd:.4f}" in text and f"tree: 4 calls ${tree.tree_usage.cost_usd:.4f}" in text
    sub_requests = [b for b in setup.requests() if user_texts(b)[:1] == ["Sub work."]]
    assert user_texts(sub_requests[1])[-1] == "Please also count the files."


def test_a_subtree_adds_up_live_and_a_budget_stop_is_shown() -> None:
    tree = Tree("root")
    tree.apply(stamped(SubagentStartedEvent(description="Top"), "s1", "L1"))
    tree.apply(stamped(SubagentStartedEvent(description="Below", parent_subagent_id="s1"), "s2", "L2"))
    priced = Usage(input_tokens=10, output_tokens=5, llm_calls=1, cost_usd=0.25)
    unpriced = Usage(input_tokens=7, output_tokens=1, llm_calls=1, unpriced_calls=1)
    tree.apply(stamped(ConversationStateUpdateEvent(key="usage", value=priced.model_dump()), "s1", "L1"))
    tree.apply(stamped(ConversationStateUpdateEvent(key="usage", value=unpriced.model_dump()), "s2", "L2"))
    top = tree.subagents["s1"]
    total = tree.subtree_usage(top)
    assert total is not None and total.llm_calls == 2 and total.cost_usd == 0.25 and total.unpriced_calls == 1
    tree.apply(stored(ConversationStateUpdateEvent(key="tree_usage", value=(priced + unpriced).model_dump())))
    assert tree.tree_usage == priced + unpriced
    tree.apply(stamped(SubagentFinishedEvent(status="error", result="stopped", stop_reason="max_tokens",
                                             budget={"limit": "max_tokens", "max": 10, "used": 15, "set_on": "s1"}), "s1", "L1"))
    assert top.stop_reason == "max_tokens"
    text = shown(tree)
    assert "stopped: max_tokens" in text and "with its sub-agents: 2 calls ≥$0.2500" in text
