"""What a Claude Code ``ResultMessage`` says: which prompt it answers, and the tokens it used."""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import ResultMessage

from ..events import Usage


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
        llm_calls=calls,
    )
