"""OpenHands' own ``RemoteConversation`` against the agent-server (with the plugin, forwarding
on): one run of the main agent with the ``task`` tool set, to its end. Runs in the OpenHands venv.

    python remote_run.py SERVER_URL MODEL_URL WORKSPACE OUT_JSON

Writes ``{"status", "conversation_id", "events": [{"id", "kind"}...], "stamped": n}``: its own
event list after the run, and how many of those carry a stamp.
"""

from __future__ import annotations

import json
import sys

from openhands.sdk import LLM, Agent, Conversation, Tool
from openhands.sdk.workspace import RemoteWorkspace
from openhands.tools.task import TaskToolSet  # its event kinds, as any client of the task tool imports


def main() -> None:
    server_url, model_url, workspace, out = sys.argv[1:5]
    agent = Agent(llm=LLM(model="openai/scripted", base_url=f"{model_url}/v1", api_key="k", usage_id="agent"),
                  tools=[Tool(name=TaskToolSet.name)], tool_concurrency_limit=3)
    conversation = Conversation(agent=agent, workspace=RemoteWorkspace(host=server_url, working_dir=workspace),
                                delete_on_close=False)
    conversation.send_message("Go.")
    conversation.run()
    events = list(conversation.state.events)
    result = {"status": conversation.state.execution_status.value, "conversation_id": str(conversation.id),
              "events": [{"id": e.id, "kind": type(e).__name__} for e in events],
              "stamped": sum(1 for e in events if "parent_tool_use_id" in e.model_dump())}
    with open(out, "w") as f:
        json.dump(result, f)
    conversation.close()


if __name__ == "__main__":
    main()
