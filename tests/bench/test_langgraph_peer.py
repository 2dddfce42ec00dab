"""The LangGraph peer benchmark's own pieces (``bench/peers/``), without installing the peer.

The tree both servers run, played by the real ``taskwire mock-llm`` to taskwire's real server;
the attribution counting on each protocol's stream; the drop-and-reconnect check on taskwire's
side; and the skip a user sees without Python 3.12.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

PEERS = Path(__file__).resolve().parents[2] / "bench" / "peers"
sys.path.insert(0, str(PEERS))

import servers  # noqa: E402
import tree_clients  # noqa: E402
import trees  # noqa: E402

from taskwire.llm.script import Script  # noqa: E402


@pytest.mark.parametrize("server", ["taskwire", "langgraph"])
def test_the_tree_script_is_k_parallel_task_calls_then_m_thinks_a_sub_agent(server: str) -> None:
    spec = trees.script(server, k=3, m=2, delay=0.2)
    Script.load(spec)  # mock-llm accepts it
    main = next(lane for lane in spec["lanes"] if lane["name"] == "main")
    calls = main["turns"][0]["tool_calls"]
    assert [c["name"] for c in calls] == ["task"] * 3
    prompts = [c["arguments"]["prompt" if server == "taskwire" else "description"] for c in calls]
    assert prompts == [trees.subagent_prompt(i) for i in range(3)]
    subs = [lane for lane in spec["lanes"] if lane["name"] != "main"]
    for i, lane in enumerate(subs):
        assert lane["match"] == {"first_user_ends_with": trees.subagent_prompt(i)}
        assert [t["tool_calls"][0]["name"] for t in lane["turns"][:2]] == ["think", "think"]
    assert all(t["delay"] == 0.2 for lane in spec["lanes"] for t in lane["turns"])
    words = [t for lane in subs for t in lane["turns"][:2] if trees.WORD in json.dumps(t)]
    assert len(words) == 1 and trees.tool_calls(3, 2) == 9


def test_v1_sub_agent_events_are_attributed_only_through_the_tasks_join() -> None:
    events = [
        ("metadata", {"run_id": "r"}),
        ("tasks", {"id": "t-a", "name": "tools", "input": [{"name": "task", "args": {}, "id": "call_a"}]}),
        ("tasks", {"id": "t-b", "name": "tools", "input": {"tool_call": {"name": "task", "args": {}, "id": "call_b"}}}),
        ("messages|tools:t-a", [{"content": "x"}, {}]),
        ("messages|tools:t-a", [{"content": "y"}, {}]),
        ("updates|tools:t-b", {}),
        ("messages|tools:t-unknown", [{}, {}]),
        ("messages", [{"content": "main"}, {}]),
    ]
    counted = trees.v1_attribution(events)
    assert counted == {"subagent_events": 4, "without_join": 0, "with_join": 3, "calls": {"call_a": 2, "call_b": 1}}


def test_v2_names_the_call_on_lifecycle_started_and_the_rest_joins_on_the_namespace() -> None:
    def event(method: str, namespace: list[str], data: dict[str, Any]) -> dict[str, Any]:
        return {"method": method, "params": {"namespace": namespace, "data": data}}

    events = [
        event("lifecycle", ["tools:t1"], {"event": "started", "cause": {"type": "toolCall", "tool_call_id": "call_a"}}),
        event("messages", ["tools:t1"], {"event": "message-start"}),
        event("tools", ["tools:t1"], {"event": "tool-started", "tool_call_id": "call_think"}),
        event("messages", ["tools:call_a"], {"event": "message-start"}),  # the parent's ToolMessage echoed
        event("tools", [], {"event": "tool-finished", "tool_call_id": "call_a"}),
    ]
    assert trees.v2_attribution(events) == {"subagent_events": 3, "without_join": 1, "with_join": 3, "calls": {"call_a": 3}}


def test_taskwire_events_are_attributed_by_their_own_stamp() -> None:
    events = [{"kind": "MessageEvent"}, {"subagent_id": "s", "parent_tool_use_id": "call_a"}, {"subagent_id": "s"}]
    assert trees.taskwire_attribution(events) == {"subagent_events": 2, "without_join": 1, "with_join": 1}


def test_compare_counts_lost_and_duplicated_events_and_drop_points_spread_over_the_stream() -> None:
    assert trees.compare([1, 2, 3, 4], [1, 2, 2, 4]) == {"reference": 4, "received": 4, "lost": 1, "duplicated": 1}
    assert trees.drop_points(110) == [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]


async def test_a_taskwire_tree_dropped_at_ten_points_loses_and_repeats_nothing(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(trees.script("taskwire", k=2, m=2, delay=0.0)))
    margv, menv, mport = servers.mock_llm(script)
    argv, env, port = servers.taskwire_tree_server(tmp_path / "t.db", tmp_path, 2)
    model_url = f"http://127.0.0.1:{mport}/v1"
    async with servers.running(margv, menv, servers.ROOT, mport, tmp_path / "mock.log"), \
            servers.running(argv, env, servers.ROOT, port, tmp_path / "server.log") as server:
        async with httpx.AsyncClient(base_url=server.base, timeout=60) as client:
            await _wait(client, "/alive")
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{mport}") as mock:
                await _wait(mock, "/script/status")
            ws = server.base.replace("http", "ws", 1)
            tree = await tree_clients.taskwire_tree(client, ws, model_url)
            attribution = trees.taskwire_attribution(tree.events)
            assert attribution["subagent_events"] > 0
            assert attribution["without_join"] == attribution["subagent_events"]
            stored = await tree_clients.taskwire_stored(ws, tree.ids["conversation"])
            dropped = await tree_clients.taskwire_dropping(client, ws, model_url, trees.drop_points(len(stored)))
            assert dropped["lost"] == dropped["duplicated"] == 0
            assert dropped["reference"] == len(stored) and dropped["reconnects"] == 10
            found = await tree_clients.taskwire_search(client, tree.ids["conversation"], trees.call_id(1))
            assert found["call_events"] > 0 and found["word_hits"] == 1


async def _wait(client: httpx.AsyncClient, path: str) -> None:
    for _ in range(600):
        try:
            if (await client.get(path)).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.1)
    raise TimeoutError(path)


def test_without_python_312_the_langgraph_bench_says_it_skips_and_exits_0(tmp_path: Path) -> None:
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "python3.12").write_text("#!/bin/sh\nexit 127\n")
    (shims / "python3.12").chmod(0o755)
    env = {**os.environ, "HOME": str(tmp_path), "PATH": f"{shims}:/usr/bin:/bin"}
    env.pop("PEER_PYTHON", None)
    done = subprocess.run([sys.executable, str(PEERS / "langgraph.py"), "--venv", str(tmp_path / "venv")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "skipped: the LangGraph Agent Server (langgraph-api 0.16.7, deepagents 0.7.32) needs Python 3.12" in done.stdout
    assert not (tmp_path / "venv").exists()
