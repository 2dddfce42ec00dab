"""What a run used, as AG-UI's ``RUN_FINISHED`` says it: token counts in ``usage``, the cost in
``metadata.taskwire`` (Sans-I/O, from the usage dicts the stored events carry)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Usage = Mapping[str, Any]
"""A usage dict as the ``usage`` state events carry it."""


def run_usage(base: Usage | None, now: Usage | None, subagents: Iterable[Usage]) -> dict[str, int] | None:
    """AG-UI's ``usage`` entry for a run: tokens of every model call of the run, its sub-agents'
    included (AG-UI's rule). ``base`` is the root's usage when the run began, ``now`` its usage
    at the end, ``subagents`` each sub-agent's of this run."""
    if base is None or now is None:
        return None
    keys = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "llm_calls")
    counts = {key: max(0, int(now.get(key, 0) or 0) - int(base.get(key, 0) or 0)) for key in keys}
    for usage in subagents:
        for key in keys:
            counts[key] += max(0, int(usage.get(key, 0) or 0))
    if not any(counts.values()):
        return None
    prompt = counts["input_tokens"] + counts["cache_read_tokens"] + counts["cache_write_tokens"]
    entry = {
        "inputTokens": prompt,
        "outputTokens": counts["output_tokens"],
        "totalTokens": prompt + counts["output_tokens"],
        "cachedInputTokens": counts["cache_read_tokens"],
    }
    if counts["cache_write_tokens"]:
        entry["cacheWriteInputTokens"] = counts["cache_write_tokens"]
    return entry


def run_cost(base: Usage | None, now: Usage | None, subagents: Iterable[Usage]) -> dict[str, Any] | None:
    """What a run's priced calls cost (``cost_usd``) and how many had no price, or ``None`` when
    none was priced (AG-UI's usage holds counts only: the cost rides in metadata)."""
    base, now = base or {}, now or {}
    parts = [(now.get("cost_usd"), base.get("cost_usd"), now.get("unpriced_calls", 0), base.get("unpriced_calls", 0))]
    parts += [(u.get("cost_usd"), None, u.get("unpriced_calls", 0), 0) for u in subagents]
    cost: float | None = None
    unpriced = 0
    for spent, before, missing, missing_before in parts:
        unpriced += max(0, int(missing or 0) - int(missing_before or 0))
        if isinstance(spent, (int, float)):
            cost = round((cost or 0.0) + spent - (before if isinstance(before, (int, float)) else 0.0), 12)
    return None if cost is None else {"cost_usd": cost, "unpriced_calls": unpriced}
