"""What a model call cost: the ``genai-prices`` table, by provider and model.

A backend that reports its own cost (Claude Code does) has that figure kept (``cost_source``
``backend``); every other call is priced here from the tokens its model reported, cache reads
and writes at their own prices (``price_table``). A model the table does not know gets no cost
(``cost_usd`` ``None``, ``unpriced_calls`` 1) and the reason, never a guess.

The table is the one ``genai-prices`` ships (pinned): no price list is fetched at run time, so
the same tokens always cost the same, and nothing leaves the machine.
"""

from __future__ import annotations

import warnings
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any
from functools import lru_cache
from importlib.metadata import version
from urllib.parse import urlsplit

import genai_prices

from .events import LLMCall, Usage
from taskwire_client.events import COST_DIGITS

TABLE = f"genai-prices {version('genai-prices')}"
"""The price table's name and version, as reasons name it."""

_APIS = {"openai": "openai", "anthropic": "anthropic"}
"""A native agent's ``llm.api`` -> the provider whose prices apply when its ``base_url`` names none."""


def provider_of(api: str | None, base_url: str | None) -> str | None:
    """Whose prices a native agent's model calls are billed at: the provider its ``base_url``
    belongs to (the table knows providers' API addresses), else its ``api`` (an OpenAI-compatible
    server elsewhere is taken at its word: a model name the provider does not list has no price),
    else ``None`` (the model's name alone picks one, as for the scripted model)."""
    if base_url:
        host = urlsplit(base_url).hostname or ""
        if host not in ("127.0.0.1", "localhost", "::1"):
            found = _provider_by_url(base_url)
            if found is not None:
                return found
    return _APIS.get(api or "")


@lru_cache(maxsize=256)
def _provider_by_url(base_url: str) -> str | None:
    try:
        return genai_prices.data_snapshot.get_snapshot().find_provider(None, None, base_url).id
    except LookupError:
        return None


def unpriced_reason(model: str | None, provider: str | None) -> str | None:
    """Why calls to ``model`` cannot be priced (``None``: the table has its price)."""
    if not model:
        return "the backend did not say which model answered"
    return _lookup(model.lower(), provider)


@lru_cache(maxsize=1024)
def _lookup(model: str, provider: str | None) -> str | None:
    try:
        genai_prices.data_snapshot.get_snapshot().find_provider_model(model, None, provider, None)
    except LookupError:
        where = f" from {provider}" if provider else ""
        return f"{TABLE} has no price for model {model!r}{where}"
    return None


def price(usage: Usage, model: str | None, provider: str | None) -> tuple[Usage, str | None]:
    """``usage`` with its ``cost_usd`` from the table (``unpriced_calls`` set instead when the model
    has no price), and the reason when it has none. Usage that already carries a cost (the
    backend's own) is returned as it is."""
    if usage.cost_usd is not None or usage.unpriced_calls:
        return usage, None
    reason = unpriced_reason(model, provider)
    if reason is not None:
        return usage.with_cost(None, unpriced_calls=max(usage.llm_calls, 1)), reason
    assert model is not None
    cost = _cost(model.lower(), provider, usage.input_tokens, usage.output_tokens,
                 usage.cache_read_tokens, usage.cache_write_tokens)
    return usage.with_cost(cost), None


def _cost(model: str, provider: str | None, input_tokens: int, output_tokens: int,
          cache_read: int, cache_write: int) -> float:
    counts = (input_tokens, output_tokens, cache_read, cache_write)
    rates = _rates(model, provider)
    if rates is not None:
        total = sum((count * rate for count, rate in zip(counts, rates)), Decimal(0)) / MTOK
    else:
        total = _table_cost(model, provider, *counts)
    return float(round(total, COST_DIGITS))


MTOK = Decimal(1_000_000)
_UNIT_USAGES = ((MTOK, 0, 0, 0), (0, MTOK, 0, 0), (0, 0, MTOK, 0), (0, 0, 0, MTOK))
_CHECK = (1234, 567, 89, 12)


def _rates(model: str, provider: str | None) -> tuple[Decimal, ...] | None:
    """The table's price of a million of each kind of token (input, output, cache read, cache
    write) for the model's prices in force now, when they are flat: then a call's cost is their
    sum, to the digit, without the table's general calculation (a quarter of a millisecond a
    call). ``None`` (ask the table every time) when a price has tiers or a fixed part, or the
    sum does not give the table's own figure at a check point."""
    found = genai_prices.data_snapshot.get_snapshot().find_provider_model(model, None, provider, None)
    prices = found[1].get_prices(_now())
    kept = _FLAT.get((model, provider))
    if kept is not None and kept[0] is prices:
        return kept[1]
    rates: tuple[Decimal, ...] | None = None
    if not any(isinstance(v, genai_prices.types.TieredPrices) for v in vars(prices).values()):
        rates = tuple(_table_cost(model, provider, *unit) for unit in _UNIT_USAGES)
        linear = sum((c * r for c, r in zip(_CHECK, rates)), Decimal(0)) / MTOK
        if _table_cost(model, provider, 0, 0, 0, 0) != 0 or linear != _table_cost(model, provider, *_CHECK):
            rates = None
    _FLAT[(model, provider)] = (prices, rates)
    return rates


_FLAT: dict[tuple[str, str | None], tuple[object, tuple[Decimal, ...] | None]] = {}
"""Per model: the prices the rates were read from (the table's object in force), and the rates."""


def _now() -> datetime:
    return datetime.now(tz=timezone.utc)


def _table_cost(model: str, provider: str | None, input_tokens: Any, output_tokens: Any,
                cache_read: Any, cache_write: Any) -> Decimal:
    # genai-prices counts cache reads and writes inside the input tokens; taskwire apart.
    tokens = genai_prices.Usage(
        input_tokens=input_tokens + cache_read + cache_write,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )
    with warnings.catch_warnings():  # a price's own notes must not fail a run under -W error
        warnings.simplefilter("ignore")
        return genai_prices.calc_price(tokens, model, provider_id=provider).total_price


def priced_call(usage: Usage, call: LLMCall | None) -> tuple[Usage, LLMCall | None]:
    """One model call's usage priced, and its ``LLMCall`` saying where the cost came from (or
    why there is none). Without a call (a backend that names no model) the usage keeps its own
    cost if it reports one, else its calls count as unpriced."""
    if call is None:
        if usage.cost_usd is None and usage.llm_calls and not usage.unpriced_calls:
            # Calls whose model nobody named: counted, and counted as unpriced.
            return usage.with_cost(None, unpriced_calls=usage.llm_calls), None
        return usage, None
    if usage.cost_usd is not None:
        return usage, call.model_copy(update={"cost_source": call.cost_source or "backend"})
    priced, reason = price(usage, call.model, call.provider)
    if reason is not None:
        return priced, call.model_copy(update={"unpriced_reason": reason})
    return priced, call.model_copy(update={"cost_source": "price_table"})
