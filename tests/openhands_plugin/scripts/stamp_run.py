"""One OpenHands conversation (openhands-sdk and -tools alone, no agent-server) stamped by
``taskwire_openhands.stamping``; runs in the OpenHands venv, writes what it saw as JSON lines.

    python stamp_run.py CONFIG_JSON OUT_JSONL

CONFIG: ``model_url`` (mock-llm's OpenAI dialect), ``workspace``, ``persistence_dir``,
``root`` (``visualizer``: the stamper's own root visualizer; ``attach``: built with
``visualizer=None`` and attached by the installed resolver, as in the agent-server),
``resume`` (``forward`` | ``refuse``), ``tool_concurrency_limit``, ``messages`` (sent in turn,
each run to its end), ``raise_in_callback`` (the callback raises on every event),
``raise_in_resolver`` (with ``attach``: the resolver raises).

Lines: ``{"type": "event", "stamp": {...} | null, "event": <model_dump>}``, ``{"type":
"task_end", ...}``, and last ``{"type": "done", "status", "persisted": [<the root's
persisted events>]}``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import threading

from openhands.sdk import LLM, Agent, Conversation, Tool
from openhands.sdk.subagent.registry import register_file_agents
from openhands.tools.preset.default import register_builtins_agents

from taskwire_openhands.stamping import SubagentStamper, TaskEnd, install


def main() -> None:
    config = json.loads(sys.argv[1])
    out = open(sys.argv[2], "w", buffering=1)
    lock = threading.Lock()

    def write(line: dict) -> None:
        with lock:
            out.write(json.dumps(line) + "\n")

    def on_event(stamp, event) -> None:  # type: ignore[no-untyped-def]
        write({"type": "event", "stamp": dataclasses.asdict(stamp) if stamp else None,
               "event": event.model_dump(mode="json", exclude_none=True), "thread": threading.current_thread().name})
        if config.get("raise_in_callback"):
            raise RuntimeError("a callback that fails")

    def on_task_end(end: TaskEnd) -> None:
        write({"type": "task_end", "call": dataclasses.asdict(end.call),
               "stamp": dataclasses.asdict(end.stamp) if end.stamp else None,
               "is_error": end.observation.is_error, "text": end.observation.text,
               "has_state": end.state is not None})

    stamper = SubagentStamper(on_event, on_task_end=on_task_end, root_events=config["root"] == "visualizer",
                              resume=config.get("resume", "forward"))
    def resolve(conversation):  # type: ignore[no-untyped-def]
        if config.get("raise_in_resolver"):
            raise RuntimeError("a resolver that fails")
        return stamper

    install(resolve=resolve if config["root"] == "attach" else None)
    register_file_agents(config["workspace"])
    register_builtins_agents(enable_browser=False)
    agent = Agent(
        llm=LLM(model="openai/scripted", base_url=config["model_url"], api_key="k", usage_id="agent"),
        tools=[Tool(name="task_tool_set")], tool_concurrency_limit=config.get("tool_concurrency_limit", 4),
    )
    conversation = Conversation(
        agent=agent, workspace=config["workspace"], persistence_dir=config["persistence_dir"],
        visualizer=stamper.visualizer() if config["root"] == "visualizer" else None,
    )
    for message in config.get("messages", ["Go."]):
        conversation.send_message(message)
        conversation.run()
    persisted = [e.model_dump(mode="json", exclude_none=True) for e in conversation.state.events]
    write({"type": "done", "status": conversation.state.execution_status.value, "persisted": persisted})
    conversation.close()


if __name__ == "__main__":
    main()
