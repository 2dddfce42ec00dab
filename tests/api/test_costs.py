"""Every model call priced: its cost is the price table's for the tokens the model reported,
each sub-agent shows its own and its subtree's, and the root the tree's total, exact at depth 3,
in ``/subagents``, ``full_state`` and the root's ``tree_usage`` state."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import genai_prices
import pytest

from taskwire.llm.mock_server import create_mock_app
from tests.agui.checks import assert_valid
from tests.agui.sse_client import read_all, run_input
from tests.api.helpers import all_events, create
from tests.api.socket_client import next_frame, open_socket
from tests.api.steering import MODEL, USAGE
from tests.api.test_metrics import scrape, total
from tests.telemetry.test_span_builder import build
from tests.servers import isolated_settings, serve_app, taskwire_server, wait_for_status


def table_price(calls: int, usage: dict[str, int] = USAGE, model: str = MODEL) -> Decimal:
    """What ``calls`` calls of ``usage`` cost by genai-prices itself (cache reads inside input)."""
    tokens = genai_prices.Usage(
        input_tokens=usage["input_tokens"] + usage.get("cache_read_tokens", 0),
        output_tokens=usage["output_tokens"],
        cache_read_tokens=usage.get("cache_read_tokens", 0),
    )
    return genai_prices.calc_price(tokens, model, provider_id="openai").total_price * calls


def chain(depth: int, usage: dict[str, int] = USAGE) -> dict[str, Any]:
    """Main delegates to level 1, level 1 to level 2, ... each level thinks, then finishes."""
    lanes = []
    for level in range(1, depth + 1):
        first: dict[str, Any] = (
            {"tool_calls": [{"name": "task", "arguments": {"description": f"L{level + 1}", "prompt": f"Level {level + 1}."}}]}
            if level < depth else {"tool_calls": [{"name": "think", "arguments": {"thought": "deepest"}}]}
        )
        lanes.append({"name": f"level{level}", "match": {"first_user_ends_with": f"Level {level}."},
                      "turns": [{**first, "usage": usage},
                                {"tool_calls": [{"name": "finish", "arguments": {"message": f"l{level}"}}], "usage": usage}]})
    lanes.append({"name": "main", "turns": [
        {"tool_calls": [{"name": "task", "arguments": {"description": "L1", "prompt": "Level 1."}}], "usage": usage},
        {"tool_calls": [{"name": "finish", "arguments": {"message": "done"}}], "usage": usage},
    ]})
    return {"lanes": lanes}


def openai_agent(url: str, model: str = MODEL) -> dict[str, Any]:
    return {"kind": "native", "llm": {"api": "openai", "model": model, "base_url": f"{url}/v1", "api_key": "k"}}


@pytest.mark.parametrize("forwarding", [False, True])
async def test_costs_are_the_tables_and_subtree_sums_are_exact_at_depth_3(tmp_path: Path, forwarding: bool) -> None:
    async with serve_app(create_mock_app(chain(3))) as url:
        async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=forwarding)) as server:
            cid = (await create(server, agent=openai_agent(url), initial_message="Main."))["id"]
            assert (await wait_for_status(server.client, cid, {"finished", "error"}))["status"] == "finished"

            per_call = float(table_price(1))
            usage_events = [e for e in await all_events(server, cid, include_subagents="true", kind="ConversationStateUpdateEvent")
                            if e["key"] == "usage"]
            assert len(usage_events) == 8
            for event in usage_events:
                added = event["value"]["added"]
                assert added["cost_usd"] == per_call and added["cost_source"] == "price_table"
                assert added["provider"] == "openai" and added["model"] == MODEL
                assert (added["input_tokens"], added["cache_read_tokens"], added["output_tokens"]) == (1000, 200, 100)

            tree = {e["label"]: e for e in (await server.client.get(f"/api/conversations/{cid}/subagents")).json()}
            assert set(tree) == {"task-1", "task-1.1", "task-1.1.1"}
            for label, below in (("task-1.1.1", 1), ("task-1.1", 2), ("task-1", 3)):
                entry = tree[label]
                assert entry["usage"]["cost_usd"] == float(table_price(2))
                assert entry["usage"]["llm_calls"] == 2
                assert entry["subtree_usage"]["cost_usd"] == float(table_price(2 * below))
                assert entry["subtree_usage"]["input_tokens"] == 2000 * below
                assert entry["subtree_usage"]["unpriced_calls"] == 0

            info = (await server.client.get(f"/api/conversations/{cid}")).json()
            assert info["usage"]["cost_usd"] == float(table_price(2))  # the root's own
            async with open_socket(server, cid, resend_mode="all") as ws:
                first = await next_frame(ws)
            assert first["key"] == "full_state"
            assert first["value"]["tree_usage"]["cost_usd"] == float(table_price(8))
            assert first["value"]["tree_usage"]["llm_calls"] == 8
            assert first["value"]["usage"]["cost_usd"] == float(table_price(2))

            # The root's stream says the tree's total as it grows, forwarding or not.
            totals = [e["value"] for e in await all_events(server, cid, kind="ConversationStateUpdateEvent")
                      if e["key"] == "tree_usage"]
            # After each call once the tree has a sub-agent (the root's first call came before it).
            assert [t["llm_calls"] for t in totals] == list(range(2, 9))
            assert totals[-1] == first["value"]["tree_usage"]


async def test_an_unknown_model_has_no_cost_and_says_why(tmp_path: Path) -> None:
    async with serve_app(create_mock_app(chain(1))) as url:
        async with taskwire_server(isolated_settings(tmp_path)) as server:
            cid = (await create(server, agent=openai_agent(url, "house-model-7"), initial_message="Main."))["id"]
            assert (await wait_for_status(server.client, cid, {"finished", "error"}))["status"] == "finished"
            usage = [e["value"] for e in await all_events(server, cid, include_subagents="true", kind="ConversationStateUpdateEvent")
                     if e["key"] == "usage"]
            for value in usage:
                assert value["added"]["cost_usd"] is None and value["added"]["unpriced_calls"] == 1
                assert "no price for model 'house-model-7'" in value["added"]["unpriced_reason"]
            info = (await server.client.get(f"/api/conversations/{cid}")).json()
            assert info["usage"]["cost_usd"] is None and info["usage"]["unpriced_calls"] == 2
            [entry] = (await server.client.get(f"/api/conversations/{cid}/subagents")).json()
            assert entry["subtree_usage"]["cost_usd"] is None and entry["subtree_usage"]["unpriced_calls"] == 2


async def test_cache_writes_are_priced_at_their_own_price(tmp_path: Path) -> None:
    """Anthropic's dialect reports cache writes apart; they cost the cache write price."""
    usage = {"input_tokens": 500, "output_tokens": 50, "cache_read_tokens": 300, "cache_write_tokens": 400}
    script = {"lanes": [{"name": "main", "turns": [{"text": "hello", "usage": usage}]}]}
    model = "claude-sonnet-4-5"
    async with serve_app(create_mock_app(script)) as url:
        async with taskwire_server(isolated_settings(tmp_path)) as server:
            agent = {"kind": "native", "llm": {"api": "anthropic", "model": model, "base_url": url, "api_key": "k"}}
            cid = (await create(server, agent=agent, initial_message="Hi."))["id"]
            assert (await wait_for_status(server.client, cid, {"finished", "error"}))["status"] == "finished"
            info = (await server.client.get(f"/api/conversations/{cid}")).json()
    expected = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=1200, output_tokens=50, cache_read_tokens=300, cache_write_tokens=400),
        model, provider_id="anthropic",
    ).total_price
    assert (info["usage"]["input_tokens"], info["usage"]["cache_read_tokens"], info["usage"]["cache_write_tokens"]) == (500, 300, 400)
    assert info["usage"]["cost_usd"] == float(expected)
    assert json.dumps(info["usage"]).count("null") == 0


async def test_metrics_count_cost_by_agent_type_and_spans_carry_it(tmp_path: Path) -> None:
    async with serve_app(create_mock_app(chain(2))) as url:
        async with taskwire_server(isolated_settings(tmp_path)) as server:
            cid = (await create(server, agent=openai_agent(url), initial_message="Main."))["id"]
            assert (await wait_for_status(server.client, cid, {"finished", "error"}))["status"] == "finished"
            samples = await scrape(server)
            spans = await build(server, cid)
    per_call = float(table_price(1))
    assert total(samples, "taskwire_llm_cost_usd_total", agent_type="main") == pytest.approx(2 * per_call)
    assert total(samples, "taskwire_llm_cost_usd_total", agent_type="general-purpose") == pytest.approx(4 * per_call)
    assert total(samples, "taskwire_llm_unpriced_requests_total") == 0
    chats = [s for s in spans if s.operation == "chat"]
    assert len(chats) == 6 and all(c.attributes["gen_ai.usage.cost"] == per_call for c in chats)
    assert all(c.attributes["taskwire.cost_source"] == "price_table" for c in chats)
    agents = [s for s in spans if s.operation == "invoke_agent" and "taskwire.subagent_id" in s.attributes]
    assert [a.attributes["gen_ai.usage.cost"] for a in agents] == [float(table_price(2))] * 2


async def test_agui_carries_the_run_cost_and_live_usage(tmp_path: Path) -> None:
    """AG-UI: ``taskwire.usage`` / ``taskwire.tree_usage`` CUSTOM events carry the cost live, and
    ``RUN_FINISHED`` the run's cost in ``metadata.taskwire`` (its usage entry holds counts only)."""
    async with serve_app(create_mock_app(chain(2))) as url:
        async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
            thread = str(uuid.uuid4())
            body = run_input(thread, "run-1", "Main.", forwardedProps={"taskwire": {"agent": openai_agent(url)}})
            frames = [event for _, event in await read_all(server.client, "POST", "/agui", json=body)]
    assert_valid(frames)
    end = frames[-1]
    assert end["type"] == "RUN_FINISHED"
    assert end["metadata"]["taskwire"]["cost_usd"] == float(table_price(6)) and end["metadata"]["taskwire"]["unpriced_calls"] == 0
    assert end["usage"][0]["inputTokens"] == 6 * 1200 and end["usage"][0]["cachedInputTokens"] == 6 * 200
    trees = [f["value"] for f in frames if f["type"] == "CUSTOM" and f["name"] == "taskwire.tree_usage"]
    assert trees[-1]["cost_usd"] == float(table_price(6))
    usages = [f["value"] for f in frames if f["type"] == "CUSTOM" and f["name"] == "taskwire.usage"]
    assert all(u["added"]["cost_usd"] == float(table_price(1)) for u in usages)
