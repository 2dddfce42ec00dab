"""``RecordCounts``: what the runtime did, counted from the records it stores, Sans-I/O.

Fed every stored record (``observe``, a record observer) and every published one
(``published``, an event subscriber); ``/metrics`` reads the counts. Only a few kinds are
parsed (status, usage, sub-agent lifecycle updates and model-call retries); the rest are
counted by kind alone.
"""

from __future__ import annotations

import json
from collections import Counter

from ..events import EventRecord

RUN_ENDS = {"finished", "paused", "error"}
TOKEN_TYPES = {"input": "input_tokens", "output": "output_tokens", "cache_read": "cache_read_tokens",
               "cache_write": "cache_write_tokens"}
ROOT_AGENT = "main"
"""The ``agent_type`` label of a root conversation's own model calls (a sub-agent's is its type)."""


class RecordCounts:
    """Counters and gauges from records; see the module docstring."""

    def __init__(self) -> None:
        self.appended: Counter[str] = Counter()
        """Events stored, by kind."""
        self.forwarded = 0
        """Sub-agent events published on their root's topic (``OH_FORWARD_SUBAGENT_EVENTS``)."""
        self.runs: Counter[str] = Counter()
        """Root runs ended, by final status (``finished``, ``paused``, ``error``)."""
        self.subagents: Counter[str] = Counter()
        """Sub-agents ended, by status (``completed``, ``error``, ``cancelled``)."""
        self.llm_requests: Counter[str] = Counter()
        """LLM requests answered, by model (``unknown`` when a peer does not say)."""
        self.llm_tokens: Counter[tuple[str, str]] = Counter()
        """Tokens by (model, ``input`` | ``output`` | ``cache_read``)."""
        self.llm_retries: Counter[str] = Counter()
        """Model calls retried, by reason (``429``, ``503``, ``connection``, ``stalled`` ...)."""
        self.llm_cost_usd: Counter[str] = Counter()
        """US dollars the priced calls cost, by agent type (``main`` or the sub-agent's type)."""
        self.llm_unpriced: Counter[str] = Counter()
        """Calls whose price is unknown, by agent type."""
        self._running_roots: set[str] = set()
        self._running_subagents: set[str] = set()
        self._types: dict[str, str] = {}  # a running sub-agent's type, by its id

    @property
    def runs_running(self) -> int:
        return len(self._running_roots)

    @property
    def subagents_running(self) -> int:
        return len(self._running_subagents)

    def published(self, record: EventRecord) -> None:
        """A record published on its root's topic."""
        if record.seq is not None and record.conversation_id != record.root_id:
            self.forwarded += 1

    def observe(self, record: EventRecord) -> None:
        """A stored record of any tree."""
        kind = record.kind
        self.appended[kind] += 1
        if kind == "ConversationStateUpdateEvent":
            event = json.loads(record.json)
            key = event.get("key")
            if key == "status" and record.conversation_id == record.root_id:
                self._root_status(record.root_id, event.get("value"))
            elif key == "usage":
                agent_type = ROOT_AGENT if record.conversation_id == record.root_id else self._types.get(record.conversation_id, "unknown")
                self._usage(event.get("value"), agent_type)
        elif kind == "SubagentStartedEvent":
            self._running_subagents.add(record.conversation_id)
            self._types[record.conversation_id] = str(json.loads(record.json).get("subagent_type") or "unknown")
        elif kind == "SubagentFinishedEvent":
            self._running_subagents.discard(record.conversation_id)
            self._types.pop(record.conversation_id, None)
            self.subagents[str(json.loads(record.json).get("status") or "completed")] += 1
        elif kind == "LLMRetryEvent":
            self.llm_retries[str(json.loads(record.json).get("reason") or "unknown")] += 1

    def _root_status(self, root_id: str, status: object) -> None:
        if status == "running":
            self._running_roots.add(root_id)
        elif status in RUN_ENDS and root_id in self._running_roots:
            self._running_roots.discard(root_id)
            self.runs[str(status)] += 1

    def _usage(self, value: object, agent_type: str) -> None:
        added = value.get("added") if isinstance(value, dict) else None
        if not isinstance(added, dict):
            return
        cost = added.get("cost_usd")
        if isinstance(cost, (int, float)):
            self.llm_cost_usd[agent_type] += cost
        if added.get("unpriced_calls"):
            self.llm_unpriced[agent_type] += int(added["unpriced_calls"])
        model = str(added.get("model") or "unknown")
        self.llm_requests[model] += int(added.get("llm_calls") or 0)
        for name, field in TOKEN_TYPES.items():
            tokens = int(added.get(field) or 0)
            if tokens:
                self.llm_tokens[(model, name)] += tokens
