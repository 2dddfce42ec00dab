"""What a Claude Code ``ResultMessage`` says: which prompt it answers, and the tokens it used."""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import ResultMessage

from ..events import Usage
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
