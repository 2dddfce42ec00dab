"""The tree workload both agent servers run, and how their streams are counted. Standard library only.

One tree: a main agent whose first answer is ``k`` parallel ``task`` calls; each sub-agent makes
``m`` ``think`` calls, one answer each, then ends; the main agent then ends. Every model answer
waits ``delay`` seconds. Both servers get it from the same ``taskwire mock-llm`` (OpenAI
dialect), whose answers are chosen statelessly (lane by the sub-agent's prompt, turn by the
number of assistant turns in the history), so N trees at once interleave freely. The scripts
differ only where the two agents' tools differ: deepagents' ``task`` takes
``{description, subagent_type}`` and an agent ends by answering text; taskwire's ``task`` takes
``{description, prompt}`` and an agent ends by calling ``finish``.

The counting functions take a stream as plain dicts, so tests check them without either server.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

WORD = "quokkabloom"
"""A word only one think call holds (sub-agent 1's last step): what the REST search looks for."""
ROOT_PROMPT = "Fan out."


def subagent_prompt(i: int) -> str:
    return f"Sub-agent {i} work."


def call_id(i: int) -> str:
    """The ``task`` call that spawns sub-agent ``i``: mock-llm's id for lane ``main``, turn 0."""
    return f"call_main_0_{i}"


def thought(i: int, j: int, m: int) -> str:
    return f"sub-agent {i} step {j}" + (f" {WORD}" if i == 1 and j == m - 1 else "")


def script(server: str, k: int, m: int, delay: float) -> dict[str, Any]:
    """The mock-llm script of one tree for ``server`` (``taskwire`` or ``langgraph``)."""
    if server not in ("taskwire", "langgraph"):
        raise ValueError(f"unknown server {server!r}")
    native = server == "taskwire"

    def end(text: str) -> dict[str, Any]:
        return {"tool_calls": [{"name": "finish", "arguments": {"message": text}}]} if native else {"text": text}

    lanes = []
    for i in range(k):
        turns: list[dict[str, Any]] = [{"tool_calls": [{"name": "think", "arguments": {"thought": thought(i, j, m)}}]} for j in range(m)]
        turns.append(end(f"sub-agent {i} done"))
        lanes.append({"name": f"sub{i}", "match": {"first_user_ends_with": subagent_prompt(i)}, "turns": turns})
    arguments = ({"description": f"part {i}", "prompt": subagent_prompt(i)} if native
                 else {"description": subagent_prompt(i), "subagent_type": "general-purpose"} for i in range(k))
    lanes.append({"name": "main", "turns": [{"tool_calls": [{"name": "task", "arguments": a} for a in arguments]}, end("all done")]})
    if delay:
        for lane in lanes:
            for turn in lane["turns"]:
                turn["delay"] = delay
    return {"lanes": lanes, "strict": True, "usage": {"input_tokens": 10, "output_tokens": 5}}


def tool_calls(k: int, m: int) -> int:
    """Tool calls of one tree that both servers make: ``k`` ``task`` and ``k * m`` ``think``
    (taskwire's ``finish`` calls are its way of ending, deepagents' is text: not counted)."""
    return k + k * m


# -- attribution: which sub-agent events name their spawning call -----------------------------


def taskwire_attribution(events: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Sub-agent events on a taskwire socket, and those stamped with their spawning call's id."""
    sub = [e for e in events if e.get("subagent_id")]
    return {"subagent_events": len(sub), "without_join": sum(1 for e in sub if e.get("parent_tool_use_id")),
            "with_join": sum(1 for e in sub if e.get("parent_tool_use_id"))}


def v1_attribution(events: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """LangGraph v1 ``runs/stream`` events (SSE name, data): sub-agent events carry only their
    namespace (``tools:<task id>``), never the tool call's id; the client joins the namespace to
    the parent's ``tasks`` event whose ``input`` holds the tool call. ``calls`` maps each
    tool_call_id to how many events the join put under it."""
    events = list(events)
    task_to_call: dict[str, str] = {}
    for name, data in events:
        if name == "tasks" and isinstance(data, dict) and "input" in data:
            calls = data["input"] if isinstance(data["input"], list) else [data["input"].get("tool_call")] if isinstance(data["input"], dict) else []
            for call in calls:
                if isinstance(call, dict) and call.get("name") == "task" and call.get("id"):
                    task_to_call[data["id"]] = call["id"]
    sub = [(name, data) for name, data in events if "|tools:" in name]
    joined: Counter[str] = Counter()
    for name, _ in sub:
        task = name.split("|", 2)[1].split(":", 1)[1]
        if task in task_to_call:
            joined[task_to_call[task]] += 1
    return {"subagent_events": len(sub), "without_join": 0, "with_join": sum(joined.values()), "calls": dict(joined)}


def v2_attribution(events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """LangGraph v2 thread events (the SSE data objects): a sub-agent's ``lifecycle`` ``started``
    names the spawning call (``cause.tool_call_id``); its other events name only the namespace,
    which the client joins to that ``started``."""
    events = list(events)
    ns_to_call: dict[str, str] = {}
    direct = 0
    sub = []
    for e in events:
        params = e.get("params", {})
        namespace = params.get("namespace") or []
        data = params.get("data") or {}
        real = bool(namespace) and not namespace[0].startswith("tools:call_")  # the synthetic ToolMessage echo is the parent's
        if not real:
            continue
        sub.append(e)
        cause = data.get("cause") if isinstance(data, dict) else None
        if e.get("method") == "lifecycle" and isinstance(cause, dict) and cause.get("tool_call_id"):
            ns_to_call[namespace[0]] = cause["tool_call_id"]
            direct += 1
    joined: Counter[str] = Counter()
    for e in sub:
        call = ns_to_call.get(e["params"]["namespace"][0])
        if call:
            joined[call] += 1
    return {"subagent_events": len(sub), "without_join": direct, "with_join": sum(joined.values()), "calls": dict(joined)}


# -- resume: what a client that dropped and reconnected got -----------------------------------


def drop_points(total: int, drops: int = 10) -> list[int]:
    """After how many received events each of ``drops`` drops happens, spread over ``total``."""
    return [round(total * (n + 1) / (drops + 1)) for n in range(drops)]


def compare(reference: Iterable[Any], received: Iterable[Any]) -> dict[str, int]:
    """Events ``lost`` (in ``reference``, never received) and ``duplicated`` (received more often
    than they are in ``reference``), as multisets of hashable keys."""
    want, got = Counter(reference), Counter(received)
    return {"reference": sum(want.values()), "received": sum(got.values()),
            "lost": sum((want - got).values()), "duplicated": sum((got - want).values())}


def sse_key(name: str, data: Any) -> str:
    """A v1 event's identity when its id is not unique: its name and its data."""
    return name + "\n" + json.dumps(data, sort_keys=True)
