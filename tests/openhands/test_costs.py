"""``kind: openhands`` retries a model call as a provider needs, and reports each model call of each agent of the tree as it happens: counted
in that agent's usage, priced from the table by the LiteLLM name's provider and model, summed up
the tree; so a root's token and cost budgets hold an OpenHands tree too."""

from __future__ import annotations

import json
import math
from pathlib import Path

from taskwire.events import LLMCall, Usage
from taskwire.pricing import priced_call
from tests.api.helpers import all_events, create
from tests.openhands.helpers import openhands_server
from tests.servers import wait_for_status

LONG = 180
MODEL = "openai/gpt-4o-mini"


def one_call() -> Usage:
    """What the table says one call of the script costs (1,000 tokens in, 100 out)."""
    usage, call = priced_call(Usage(input_tokens=1000, output_tokens=100, llm_calls=1), LLMCall(model="gpt-4o-mini", provider="openai"))
    assert call is not None and call.cost_source == "price_table", call
    return usage


async def test_each_model_call_is_counted_and_priced_in_its_own_agent(tmp_path: Path) -> None:
    async with openhands_server(tmp_path, "priced") as oh:
        agent = oh.agent()
        agent["llm"]["model"] = MODEL
        info = await create(oh.server, agent=agent, workspace=str(oh.workspace), initial_message="Go.")
        done = await wait_for_status(oh.server.client, info["id"], {"finished", "error"}, timeout=LONG)
        assert done["status"] == "finished", done
        price = one_call().cost_usd
        assert price is not None and price > 0
        subagents = {s["description"]: s for s in (await oh.server.client.get(f"/api/conversations/{info['id']}/subagents")).json()}
        for name, calls in (("alpha", 2), ("beta", 1)):
            usage = subagents[name]["usage"]
            assert (usage["llm_calls"], usage["input_tokens"], usage["output_tokens"]) == (calls, 1000 * calls, 100 * calls)
            assert math.isclose(usage["cost_usd"], calls * price, rel_tol=1e-9), usage
        root = (await oh.server.client.get(f"/api/conversations/{info['id']}")).json()["usage"]
        assert root["llm_calls"] == 2 and math.isclose(root["cost_usd"], 2 * price, rel_tol=1e-9), root
        # Each call as it happened, under its agent: the usage update names the model and its price list.
        updates = [e for e in await all_events(oh.server, info["id"], include_subagents="true", kind="ConversationStateUpdateEvent")
                   if e["key"] == "usage"]
        assert len(updates) == 5
        assert {(e["value"]["added"]["model"], e["value"]["added"]["provider"], e["value"]["added"]["cost_source"]) for e in updates} \
            == {("gpt-4o-mini", "openai", "price_table")}
        tree = [e for e in await all_events(oh.server, info["id"], kind="ConversationStateUpdateEvent") if e["key"] == "tree_usage"]
        assert tree and tree[-1]["value"]["llm_calls"] == 5
        assert math.isclose(tree[-1]["value"]["cost_usd"], 5 * price, rel_tol=1e-9)


async def test_a_roots_token_budget_stops_its_openhands_tree(tmp_path: Path) -> None:
    async with openhands_server(tmp_path, "priced") as oh:
        agent = oh.agent(max_tokens=5000)  # the sub-agent's loop passes it on its 4th call
        agent["llm"]["model"] = MODEL
        info = await create(oh.server, agent=agent, workspace=str(oh.workspace), initial_message="Spend.")
        done = await wait_for_status(oh.server.client, info["id"], {"paused", "finished", "error"}, timeout=LONG)
        assert done["status"] == "paused", done
        assert done["status_reason"].startswith("max_tokens budget passed: "), done
        subagents = (await oh.server.client.get(f"/api/conversations/{info['id']}/subagents")).json()
        assert [s["status"] for s in subagents] == ["cancelled"], subagents
        tasks = [e for e in await all_events(oh.server, info["id"], kind="ObservationEvent") if e["tool_name"] == "task"]
        assert len(tasks) == 1 and tasks[0]["is_error"]


async def test_a_cost_budget_on_an_unknown_model_is_refused_and_a_known_one_taken(tmp_path: Path) -> None:
    async with openhands_server(tmp_path, "priced") as oh:
        agent = oh.agent(max_cost_usd=0.5)
        agent["llm"]["model"] = "openai/house-model-7"
        refused = await oh.server.client.post("/api/conversations", json={"agent": agent, "run": False})
        assert refused.status_code == 400 and refused.json()["code"] == "budget_not_checkable", refused.text
        assert "house-model-7" in refused.json()["detail"]
        agent["llm"]["model"] = MODEL
        taken = await oh.server.client.post("/api/conversations", json={"agent": agent, "run": False})
        assert taken.status_code == 201, taken.text


async def test_a_reset_and_a_429_do_not_end_an_openhands_tree(tmp_path: Path) -> None:
    # OpenHands retries through LiteLLM (num_retries = OH_LLM_MAX_RETRIES): before, the driver
    # turned its retries off and one reset ended the tree.
    async with openhands_server(tmp_path, "faults") as oh:
        info = await create(oh.server, agent=oh.agent(), workspace=str(oh.workspace), initial_message="Go.")
        done = await wait_for_status(oh.server.client, info["id"], {"finished", "error"}, timeout=LONG)
        assert done["status"] == "finished", done
        subagents = (await oh.server.client.get(f"/api/conversations/{info['id']}/subagents")).json()
        assert [(s["description"], s["status"]) for s in subagents] == [("alpha", "completed")]
        entries = [json.loads(line) for line in oh.log.read_text().splitlines() if line.strip()]
        assert [e["fault"] or e["status"] for e in entries if e["lane"] == "main"][:2] == ["reset", 200]
        sub = [e for e in entries if e["lane"] == "sub-a"]
        assert [e["status"] for e in sub] == [429, 200]
        assert sub[1]["at"] - sub[0]["at"] >= 1  # its Retry-After was honoured
