"""What one ACP prompt turn used and cost, from its ``session/prompt`` result (Sans-I/O)."""

from __future__ import annotations

from typing import Any

from ..events import LLMCall, Usage


def turn_usage(result: Any) -> Usage | None:
    """Tokens of a turn, from a ``session/prompt`` result's ``usage`` (an unstable ACP field)."""
    usage = result.get("usage") if isinstance(result, dict) else None
    if not isinstance(usage, dict):
        return None

    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and value >= 0 else 0

    return Usage(
        input_tokens=count("inputTokens"),
        output_tokens=count("outputTokens"),
        cache_read_tokens=count("cachedReadTokens"),
        cache_write_tokens=count("cachedWriteTokens"),
    )


def turn_model(result: Any) -> str | None:
    """The model that answered a turn, when the agent names exactly one (claude-agent-acp's
    ``_meta.quota.model_usage``): what the turn's tokens are priced by."""
    meta = result.get("_meta") if isinstance(result, dict) else None
    quota = meta.get("quota") if isinstance(meta, dict) else None
    models = quota.get("model_usage") if isinstance(quota, dict) else None
    names = {m.get("model") for m in models if isinstance(m, dict)} if isinstance(models, list) else set()
    return names.pop() if len(names) == 1 and isinstance(next(iter(names)), str) else None


def turn_call(result: Any, reported_cost: float | None) -> tuple[Usage, LLMCall] | None:
    """The turn's usage and call record, or ``None`` when the result reports no usage. The
    agent's own cost figure (``reported_cost``, from its ``usage_update``) wins: it covers the
    whole turn, its sub-agents' calls included (they report tokens only, so theirs count as
    unpriced)."""
    usage = turn_usage(result)
    if usage is None:
        return None
    call = LLMCall(model=turn_model(result))
    if reported_cost is None:
        return usage, call
    return usage.with_cost(reported_cost), call.model_copy(
        update={"cost_source": "backend", "reported_cost_usd": reported_cost})
