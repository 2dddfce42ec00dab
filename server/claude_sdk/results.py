"""What a Claude Code ``ResultMessage`` says: which prompt it answers, and the tokens it used."""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import ResultMessage

from ..events import LLMCall, Usage
from taskwire_client.events import COST_DIGITS


def answers_prompt(message: ResultMessage, prompt_id: str) -> bool:
    """Whether ``message`` ends the turn of the prompt sent with ``prompt_id``."""
    uuids = message.user_message_uuids or ([message.user_message_uuid] if message.user_message_uuid else [])
    if uuids:
        return prompt_id in uuids
    # Older CLIs name no prompt: a result nobody injected answers the prompt in flight.
    return message.origin is None


def result_usage(usage: Any, calls: int) -> Usage | None:
    """A result's ``usage`` as taskwire's, with the turn's ``calls`` LLM calls."""
    if not isinstance(usage, dict):
        return None
    return Usage(
        input_tokens=int(usage.get("input_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0),
        cache_read_tokens=int(usage.get("cache_read_input_tokens") or 0),
        cache_write_tokens=int(usage.get("cache_creation_input_tokens") or 0),
        llm_calls=calls,
    )


def turn_cost(reported: Any, before: float) -> float | None:
    """What one turn cost by Claude Code's own figure: a result's ``total_cost_usd`` is the
    session's running total (zeroed when the session resets), so the turn's is the rise since
    the last result's ``before``. ``None`` when the result reports none."""
    if not isinstance(reported, (int, float)) or isinstance(reported, bool) or reported < 0:
        return None
    return round(float(reported) - before, COST_DIGITS) if reported >= before else float(reported)


class TurnCosts:
    """Claude Code's own cost figure, split between the main agent and its sub-agents.

    Claude Code reports one running total for the session (a result's ``total_cost_usd``) and
    nothing per sub-agent, so each sub-agent is priced by the table from its tokens, and the
    main agent's share of a turn is the turn's reported cost less what its sub-agents were
    counted as: the tree's total is then Claude Code's figure."""

    def __init__(self) -> None:
        self._reported_total = 0.0
        """Claude Code's running total at the last result."""
        self._subagent_cost = 0.0
        """What sub-agents counted since the last result, by the price table."""

    def subagent_counted(self, usage: Usage) -> None:
        """A sub-agent's priced usage was counted: its cost is part of the next turn's figure."""
        self._subagent_cost += usage.cost_usd or 0

    def main_turn(self, usage: Usage, call: LLMCall, reported: Any) -> tuple[Usage, LLMCall]:
        """The main agent's usage and call for a turn whose result reported ``reported``
        (unchanged when it reported no cost)."""
        cost = turn_cost(reported, self._reported_total)
        if cost is None:
            return usage, call
        self._reported_total = float(reported)
        own = max(0.0, round(cost - self._subagent_cost, COST_DIGITS))
        self._subagent_cost = 0.0
        return usage.with_cost(own), call.model_copy(update={"cost_source": "backend", "reported_cost_usd": cost})
