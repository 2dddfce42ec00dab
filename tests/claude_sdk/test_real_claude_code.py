"""End to end: the real ``claude-agent-sdk`` and its Claude Code binary, offline against
``taskwire mock-llm``, driven by the real taskwire server and watched over a real WebSocket.

Skipped when the bundled CLI is missing, except in CI (then they fail).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import genai_prices

from taskwire.events.closing import INTERRUPTED
from tests.api.helpers import all_events, create
from tests.api.socket_client import next_frame, open_socket
from tests.claude_sdk.real_claude import DEMO, claude_agent, claude_children, mock_llm, need_claude_code
from tests.claude_sdk.watch import (
    call_text,
    assert_stamped,
    assistant_texts,
    call_ids,
    call_statuses,
    frames_until_run_ends,
    last_call,
    root_frames,
    say,
)
from tests.api.steering import gate_command
from tests.servers import RunningServer, isolated_settings, taskwire_server, wait_for_status

MAIN_TEXTS = [
    "I'll run the command first.",
    "Now two sub-agents, in parallel.",
    "All done: main-agent, subagent-a and subagent-b were echoed.",
]
AGENT_CALLS = {"toolu_main_1_0": "a", "toolu_main_1_1": "b"}



async def test_real_claude_code_two_parallel_subagents_watched_over_a_websocket(tmp_path: Path) -> None:
    need_claude_code()
    script = DEMO / "claude_code_two_subagents.yaml"
    async with mock_llm(script, tmp_path / "requests.jsonl") as mock:
        async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
            agent = claude_agent(mock, tmp_path / "home")
            conversation = (await create(server, agent=agent, run=False))["id"]
            async with open_socket(server, conversation) as ws:
                await next_frame(ws)
                await say(server, conversation, "Run echo main-agent, then two sub-agents.")
                frames = await frames_until_run_ends(ws)
            subagents = (await server.client.get(f"/api/conversations/{conversation}/subagents")).json()
            streams = {s["subagent_id"]: await all_events(server, s["subagent_id"]) for s in subagents}
            info = (await server.client.get(f"/api/conversations/{conversation}")).json()
        assert mock.script.unused_steps() == [] and mock.script.failures == [] == mock.script.unscripted
    assert claude_children() == []  # the CLI never outlives the server that ran it

    errors = [f for f in frames if f["kind"] == "AgentErrorEvent"]
    assert frames[-1]["value"] == "finished", errors
    root = root_frames(frames)
    assert assistant_texts(root) == MAIN_TEXTS
    assert "".join(f["content"] for f in root if f["kind"] == "StreamingDeltaEvent") == "".join(MAIN_TEXTS)
    assert call_ids(root) == {"toolu_main_0_0", *AGENT_CALLS}
    assert call_text(last_call(root, "toolu_main_0_0")) == "main-agent"
    assert all(call_statuses(root, call)[-1] == "completed" for call in call_ids(root))
    assert info["usage"]["llm_calls"] == 3 and info["usage"]["input_tokens"] > 0

    assert {s["parent_tool_use_id"]: s["status"] for s in subagents} == dict.fromkeys(AGENT_CALLS, "completed")
    for entry in subagents:
        letter, subagent_id = AGENT_CALLS[entry["parent_tool_use_id"]], entry["subagent_id"]
        live = [f for f in frames if f.get("subagent_id") == subagent_id]
        for frame in live:
            assert_stamped(frame, tool_call_id=entry["parent_tool_use_id"], subagent_id=subagent_id)
        assert [f["id"] for f in live if "seq" in f] == [e["id"] for e in streams[subagent_id]]
        prompt = f"Run `echo subagent-{letter}` with Bash and report what it printed."
        assert assistant_texts(live) == [f"subagent-{letter} printed: subagent-{letter}"]
        assert [f["content"] for f in live if f["kind"] == "MessageEvent" and f["role"] == "user"] == [prompt]
        bash = f"toolu_subagent-{letter}_0_0"
        assert call_ids(live) == {bash}
        assert call_text(last_call(live, bash)) == f"subagent-{letter}"
        assert live[-1]["kind"] == "SubagentFinishedEvent" and live[-1]["status"] == "completed"
        assert entry["result"] == f"subagent-{letter} printed: subagent-{letter}"
        assert entry["usage"]["llm_calls"] == 2


INTERRUPTED_SCRIPT = """
description: Claude Code starts a long command; the user interrupts, then asks again.
lanes:
  - name: title
    optional: true
    repeat: true
    match: {system_contains: "You are naming a coding session"}
    turns:
      - text: '{"title": "Interrupt demo"}'
  - name: main
    turns:
      - tool_calls:
          - name: Bash
            # Not a bare `sleep`: Claude Code refuses standalone sleeps at once.
            arguments: {command: "python3 -c 'import time; time.sleep(120)'", description: Wait a long time}
      - text: "Stopped; here again."
"""


async def test_interrupting_real_claude_code_fails_the_running_call_and_the_next_prompt_works(tmp_path: Path) -> None:
    need_claude_code()
    async with mock_llm(INTERRUPTED_SCRIPT, tmp_path / "requests.jsonl") as mock:
        async with taskwire_server(isolated_settings(tmp_path)) as server:
            conversation = (await create(server, agent=claude_agent(mock, tmp_path / "home"), run=False))["id"]
            async with open_socket(server, conversation) as ws:
                await next_frame(ws)
                await say(server, conversation, "Wait a long time.")
                while True:  # until Claude Code runs the command
                    frame = await next_frame(ws)
                    if frame["kind"] == "ACPToolCallEvent" and frame["status"] == "in_progress":
                        break
                response = await server.client.post(f"/api/conversations/{conversation}/interrupt")
                assert response.status_code == 200, response.text
                interrupted = await frames_until_run_ends(ws)
                await say(server, conversation, "Are you there?")
                answered = await frames_until_run_ends(ws)
            await server.client.delete(f"/api/conversations/{conversation}")
            assert claude_children() == []  # deleting the conversation ended its Claude Code

    call = frame["tool_call_id"]
    assert interrupted[-1]["value"] == "paused"
    assert call_statuses(interrupted, call) == ["failed"]
    assert call_text(last_call(interrupted, call)) == INTERRUPTED
    assert answered[-1]["value"] == "finished", [f for f in answered if f["kind"] == "AgentErrorEvent"]
    assert assistant_texts(answered) == ["Stopped; here again."]
    assert call not in call_ids(answered)  # the interrupted turn's tail never reopens the call


async def test_native_agent_delegates_to_claude_code_whose_own_subagent_nests_under_it(tmp_path: Path) -> None:
    need_claude_code()
    script = DEMO / "claude_code_nested.yaml"
    workspace = tmp_path / "project"
    async with mock_llm(script, tmp_path / "requests.jsonl") as mock:
        # A project sub-agent type that runs Claude Code through the SDK.
        spec = claude_agent(mock, tmp_path / "home")
        types = workspace / ".agents" / "agents"
        types.mkdir(parents=True)
        (types / "claude-code.md").write_text(
            "---\n" + json.dumps({"name": "claude-code", "description": "Claude Code (SDK)", "agent": spec})
            + "\n---\nClaude Code runs with its own system prompt.\n"
        )
        native = {"kind": "native", "llm": {"api": "scripted", "script": str(script)}}
        async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
            conversation = (await create(server, agent=native, workspace=str(workspace), run=False))["id"]
            async with open_socket(server, conversation) as ws:
                await next_frame(ws)
                await say(server, conversation, "Ask Claude Code.")
                frames = await frames_until_run_ends(ws)
            tree = (await server.client.get(f"/api/conversations/{conversation}/subagents")).json()
            leaf_events = await all_events(server, tree[-1]["subagent_id"]) if len(tree) == 2 else []
        assert ("claude-main", 1) not in mock.script.unused_steps() and mock.script.failures == [] == mock.script.unscripted
    assert claude_children() == []

    assert frames[-1]["value"] == "finished", [f for f in frames if f["kind"] == "AgentErrorEvent"]
    claude, leaf = tree
    assert (claude["subagent_type"], claude["status"], claude["parent_subagent_id"]) == ("claude-code", "completed", None)
    assert claude["result"] == "My sub-agent ran it: nested-leaf printed: nested-leaf"
    assert leaf["parent_subagent_id"] == claude["subagent_id"]
    assert leaf["parent_tool_use_id"] == "toolu_claude-main_0_0"
    assert leaf["status"] == "completed"
    for event in leaf_events:
        assert_stamped(event, tool_call_id="toolu_claude-main_0_0", subagent_id=leaf["subagent_id"])
    assert call_text(last_call(leaf_events, "toolu_claude-sub_0_0")) == "nested-leaf"
    # The native parent sees only its task call's observation, never Claude Code's own events.
    root = root_frames(frames)
    assert [f["tool_name"] for f in root if f["kind"] == "ActionEvent"] == ["task", "finish"]
    assert not [f for f in root if f["kind"] == "ACPToolCallEvent"]


CANCEL_ONE_SCRIPT = """
description: Claude Code runs two sub-agents in parallel; the one with a long command is cancelled alone.
presets: [claude_code]
lanes:
  - name: slow
    match: {first_user_ends_with: "Wait a long time with Bash."}
    turns:
      - tool_calls:
          - name: Bash
            arguments: {command: "python3 -c 'import time; time.sleep(120)'", description: Wait a long time}
  - name: quick
    match: {first_user_ends_with: "Run `echo quick` with Bash and report what it printed."}
    turns:
      - tool_calls:
          - name: Bash
            arguments: {command: echo quick, description: Print quick}
      - text: "quick printed: quick"
  - name: main
    turns:
      - text: "Two sub-agents."
        tool_calls:
          - name: Agent
            arguments: {description: Wait, prompt: "Wait a long time with Bash.", subagent_type: general-purpose, run_in_background: false}
          - name: Agent
            arguments:
              description: Echo quick
              prompt: "Run `echo quick` with Bash and report what it printed."
              subagent_type: general-purpose
              run_in_background: false
      - text: "One was stopped; the other printed quick."
"""


async def test_cancelling_one_real_claude_code_subagent_stops_only_it(tmp_path: Path) -> None:
    need_claude_code()
    async with mock_llm(CANCEL_ONE_SCRIPT, tmp_path / "requests.jsonl") as mock:
        async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
            conversation = (await create(server, agent=claude_agent(mock, tmp_path / "home"), run=False))["id"]
            async with open_socket(server, conversation) as ws:
                await next_frame(ws)
                await say(server, conversation, "Run two sub-agents.")
                before = []
                while True:  # until the slow sub-agent runs its command
                    frame = await next_frame(ws)
                    before.append(frame)
                    if (
                        frame.get("parent_tool_use_id") == "toolu_main_0_0"
                        and frame["kind"] == "ACPToolCallEvent"
                        and frame["status"] == "in_progress"
                    ):
                        break
                slow = frame["subagent_id"]
                response = await server.client.post(f"/api/conversations/{conversation}/subagents/{slow}/cancel")
                assert response.status_code == 202, response.text
                frames = before + await frames_until_run_ends(ws)
            subagents = {s["parent_tool_use_id"]: s for s in (await server.client.get(f"/api/conversations/{conversation}/subagents")).json()}
            again = await server.client.post(f"/api/conversations/{conversation}/subagents/{slow}/cancel")
        assert claude_children() == []

    assert frames[-1]["value"] == "finished", [f for f in frames if f["kind"] == "AgentErrorEvent"]
    finished = {f["subagent_id"]: f["status"] for f in frames if f["kind"] == "SubagentFinishedEvent"}
    assert finished[slow] == "cancelled"
    assert subagents["toolu_main_0_0"]["status"] == "cancelled"
    assert subagents["toolu_main_0_1"]["status"] == "completed"
    assert subagents["toolu_main_0_1"]["result"] == "quick printed: quick"
    assert assistant_texts(root_frames(frames))[-1] == "One was stopped; the other printed quick."
    assert again.status_code == 400 and again.json()["code"] == "subagent_not_running"


async def test_real_claude_codes_own_cost_is_kept_and_the_tree_adds_up_to_it(tmp_path: Path) -> None:
    """Claude Code reports what each turn cost (the result's running ``total_cost_usd``): the main
    agent's usage keeps that figure (less its sub-agents' share, priced by the table from their
    tokens and model), so the tree's total is exactly what Claude Code reported."""
    need_claude_code()
    script = DEMO / "claude_code_two_subagents.yaml"
    async with mock_llm(script, tmp_path / "requests.jsonl") as mock:
        async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
            conversation = (await create(server, agent=claude_agent(mock, tmp_path / "home"), run=False))["id"]
            async with open_socket(server, conversation) as ws:
                await next_frame(ws)
                await say(server, conversation, "Run echo main-agent, then two sub-agents.")
                await frames_until_run_ends(ws)
            async with open_socket(server, conversation) as ws:
                full_state = await next_frame(ws)
            every = await all_events(server, conversation, include_subagents="true", kind="ConversationStateUpdateEvent")
            subagents = (await server.client.get(f"/api/conversations/{conversation}/subagents")).json()
    added = [e["value"]["added"] for e in every if e["key"] == "usage"]
    root_turns = [a for a in added if a.get("cost_source") == "backend"]
    assert root_turns and all(a["reported_cost_usd"] > 0 for a in root_turns)
    reported = round(sum(a["reported_cost_usd"] for a in root_turns), 12)
    assert full_state["value"]["tree_usage"]["cost_usd"] == reported
    assert len(subagents) == 2
    for entry in subagents:
        [counted] = [a for a in added if a["llm_calls"] == 2 and a["input_tokens"] == entry["usage"]["input_tokens"]][:1]
        assert counted["cost_source"] == "price_table" and counted["provider"] == "anthropic"
        tokens = genai_prices.Usage(input_tokens=entry["usage"]["input_tokens"], output_tokens=entry["usage"]["output_tokens"])
        table = genai_prices.calc_price(tokens, counted["model"], provider_id="anthropic").total_price
        assert entry["usage"]["cost_usd"] == float(table) == entry["subtree_usage"]["cost_usd"]
    own = full_state["value"]["usage"]["cost_usd"]
    assert own == round(reported - sum(e["usage"]["cost_usd"] for e in subagents), 12)


async def test_a_message_to_a_claude_code_subagent_reaches_its_next_model_request(tmp_path: Path) -> None:
    """A native agent delegates to a sub-agent type that runs real Claude Code (``claude_sdk``);
    a person's message sent while its Bash call runs is folded by Claude Code into its next
    model request, and reaches no request of the native parent."""
    need_claude_code()
    gate = tmp_path / "gate"
    prompt = "Wait at the gate, then say what happened."
    script = {"presets": ["claude_code"], "lanes": [
        {"name": "claude", "match": {"first_user_ends_with": prompt}, "turns": [
            {"tool_calls": [{"name": "Bash", "arguments": {"command": gate_command(gate), "description": "Wait"}}]},
            {"text": "released, and I read your note"}]},
        {"name": "main", "turns": [
            {"tool_calls": [{"name": "task", "arguments": {"description": "Claude", "prompt": prompt, "subagent_type": "claude-sub"}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"message": "main done"}}]}]},
    ]}
    async with mock_llm(script, tmp_path / "requests.jsonl") as mock:
        workspace = tmp_path / "project"
        types = workspace / ".agents" / "agents"
        types.mkdir(parents=True)
        spec = json.dumps(claude_agent(mock, tmp_path / "home"))
        (types / "claude-sub.md").write_text(f"---\nname: claude-sub\ndescription: Claude Code.\nagent: {spec}\n---\n")
        async with taskwire_server(isolated_settings(tmp_path, forward_subagent_events=True)) as server:
            agent = {"kind": "native", "llm": {"api": "openai", "model": "gpt-4o-mini", "base_url": f"{mock.url}/v1", "api_key": "k"}}
            cid = (await create(server, agent=agent, initial_message="Main work.", workspace=str(workspace)))["id"]
            try:
                sid = await subagent_running_bash(server, cid)
                url = f"/api/conversations/{cid}/subagents/{sid}/messages"
                response = await server.client.post(url, json={"content": "STEER: mind the second file"})
                assert response.status_code == 202, response.text
            finally:
                gate.touch()
            info = await wait_for_status(server.client, cid, {"finished", "error", "paused"}, timeout=120)
            assert info["status"] == "finished"
            sub_events = await all_events(server, cid, subagent_id=sid)
    requests = [json.loads(json.loads(line)["body"]) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    claude = [r for r in requests if prompt in json.dumps(r.get("messages", [])[:1])]
    steered = [r for r in claude if "STEER: mind the second file" in json.dumps(r["messages"])]
    assert len(claude) >= 2 and steered and steered[0] is claude[1]  # its very next request
    native = [r for r in requests if [m.get("content") for m in r.get("messages", []) if m["role"] == "user"][:1] == ["Main work."]]
    assert native and all("STEER" not in json.dumps(r) for r in native)
    assert [e["content"] for e in sub_events if e["kind"] == "MessageEvent" and e["role"] == "user"][-1] == "STEER: mind the second file"


async def subagent_running_bash(server: RunningServer, cid: str) -> str:
    """Wait until the conversation's one sub-agent runs its Bash call; its id."""
    deadline = asyncio.get_running_loop().time() + 120
    while True:
        for entry in (await server.client.get(f"/api/conversations/{cid}/subagents")).json():
            events = await all_events(server, cid, subagent_id=entry["subagent_id"])
            if any(e["kind"] == "ACPToolCallEvent" and e.get("status") == "in_progress" for e in events):
                return entry["subagent_id"]
        assert asyncio.get_running_loop().time() < deadline, "Claude Code never ran its command"
        await asyncio.sleep(0.1)
