"""Pricing a call: the figure is genai-prices' own, to the digit, whether it comes from the
flat-rate shortcut or the table's general calculation; an unknown model has none and says why."""

from __future__ import annotations

import random

import genai_prices
import pytest

from taskwire.events import LLMCall, Usage
from taskwire.pricing import priced_call, provider_of, unpriced_reason


def table(model: str, provider: str | None, usage: Usage) -> float:
    tokens = genai_prices.Usage(
        input_tokens=usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
        output_tokens=usage.output_tokens, cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    return float(round(genai_prices.calc_price(tokens, model, provider_id=provider).total_price, 12))


@pytest.mark.parametrize("model,provider", [
    ("gpt-4o-mini", "openai"), ("gpt-4o", None), ("claude-haiku-4-5", "anthropic"),
    ("claude-sonnet-4-5", "anthropic"),  # tiered: above 200k input tokens every token costs more
])
def test_a_calls_cost_is_the_tables_for_any_tokens(model: str, provider: str | None) -> None:
    picks = random.Random(7)
    for _ in range(200):
        usage = Usage(input_tokens=picks.randint(0, 400_000), output_tokens=picks.randint(0, 20_000),
                      cache_read_tokens=picks.randint(0, 100_000), cache_write_tokens=picks.randint(0, 50_000), llm_calls=1)
        priced, call = priced_call(usage, LLMCall(model=model, provider=provider))
        assert priced.cost_usd == table(model, provider, usage)
        assert call is not None and call.cost_source == "price_table" and priced.unpriced_calls == 0


def test_an_unknown_model_is_unpriced_with_the_reason_and_a_backends_own_cost_is_kept() -> None:
    usage = Usage(input_tokens=10, output_tokens=2, llm_calls=1)
    priced, call = priced_call(usage, LLMCall(model="house-model-7", provider="openai"))
    assert priced.cost_usd is None and priced.unpriced_calls == 1
    assert call is not None and call.unpriced_reason and "no price for model 'house-model-7' from openai" in call.unpriced_reason
    own, call = priced_call(usage.with_cost(0.5), LLMCall(model="house-model-7"))
    assert own.cost_usd == 0.5 and call is not None and call.cost_source == "backend"
    nameless, _ = priced_call(usage, None)  # a backend that names no model
    assert nameless.cost_usd is None and nameless.unpriced_calls == 1
    assert unpriced_reason(None, None) == "the backend did not say which model answered"


def test_whose_prices_apply() -> None:
    assert provider_of("openai", "http://127.0.0.1:9/v1") == "openai"  # a local server taken at its word
    assert provider_of("openai", "https://openrouter.ai/api/v1") == "openrouter"
    assert provider_of("anthropic", None) == "anthropic"
    assert provider_of("scripted", None) is None  # the model's name picks one
