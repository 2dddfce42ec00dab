"""The peer's graph: a deepagents agent on the benchmark's scripted model (``taskwire mock-llm``).

Run by the LangGraph Agent Server from bench/peers/.venv-langgraph; ``BENCH_MODEL_URL`` is the
mock's ``.../v1``. Its one extra tool, ``think``, does what taskwire's does: nothing but return.
Sub-agents of the default ``general-purpose`` type inherit the main agent's tools.
"""

import os

from deepagents import create_deep_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI


@tool
def think(thought: str) -> str:
    """Write down a thought; nothing else happens."""
    return "Your thought has been logged."


model = ChatOpenAI(model="mock", base_url=os.environ["BENCH_MODEL_URL"], api_key="sk-unused", streaming=True,
                   max_retries=0, use_responses_api=False)
graph = create_deep_agent(model=model, tools=[think], system_prompt="You are a benchmark agent. Delegate with the task tool.")
