"""Tokens and cost: of one model call (``LLMCall``), of an agent or a tree (``Usage``), and as a
client adds them up (a sub-agent's own, and its subtree's)."""

from __future__ import annotations

from typing import Any, Iterable, Literal, Protocol

from pydantic import BaseModel, ConfigDict, PrivateAttr, computed_field, model_validator

from taskwire_client.timestamps import Timestamp


class Usage(BaseModel):
    """Token usage and cost of one LLM call, a sub-agent or a whole conversation."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    input_tokens: int = 0
    """Prompt tokens billed at the input price (cache reads and writes not included)."""
    output_tokens: int = 0
    """Completion tokens billed."""
    cache_read_tokens: int = 0
    """Prompt tokens served from the provider's cache (billed at the cache read price)."""
    cache_write_tokens: int = 0
    """Prompt tokens written to the provider's cache (billed at the cache write price)."""
    llm_calls: int = 0
    """How many LLM requests these figures add up."""
    unpriced_calls: int = 0
    """Calls whose price is unknown (a model the table does not know, a backend that names no
    model): not in ``cost_usd``, which is then a lower bound (or ``None`` when no call is priced).
    Never a guess."""
    _cost: float | None = PrivateAttr(default=None)

    def __init__(self, *, cost_usd: float | None = None, **counts: Any) -> None:
        super().__init__(**counts)
        self._cost = _cost_of(cost_usd)

    @model_validator(mode="wrap")
    @classmethod
    def _take_cost(cls, data: Any, handler: Any) -> Any:
        # A usage read back from JSON (a record, a state event) keeps its cost.
        cost = data.get("cost_usd") if isinstance(data, dict) else None
        usage = handler(data)
        if cost is not None and isinstance(usage, Usage) and usage._cost is None:
            usage._cost = _cost_of(cost)
        return usage

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cost_usd(self) -> float | None:
        """What the priced calls cost, in US dollars: the backend's own figure where it reports
        one (Claude Code does), else the ``genai-prices`` table's for the provider and model.
        ``None``: no call of these has a known price (see ``unpriced_calls``). Not one of the
        counts (``model_fields``): code that adds or subtracts those field by field keeps
        working, and the cost is added only by ``+``, which knows an unknown one."""
        return self._cost

    def with_cost(self, cost_usd: float | None, **counts: int) -> Usage:
        """A copy with ``cost_usd`` (and any counts) replaced."""
        return Usage(**{**self.model_dump(exclude={"cost_usd"}), **counts}, cost_usd=cost_usd)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            llm_calls=self.llm_calls + other.llm_calls,
            unpriced_calls=self.unpriced_calls + other.unpriced_calls,
            cost_usd=add_costs(self.cost_usd, other.cost_usd),
        )

    @property
    def tokens(self) -> int:
        """Every token billed: input, output, cache reads and writes (what ``max_tokens`` counts)."""
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens


def _cost_of(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"cost_usd must be a non-negative number, not {value!r}")
    return round(float(value), COST_DIGITS)


COST_DIGITS = 12
"""Costs are kept to 1e-12 dollars: sums then come out the same in any order (a sub-tree's
total equals the sum of its parts, wherever it is added up)."""


def add_costs(a: float | None, b: float | None) -> float | None:
    """Two costs added (``None``: unknown, so the other alone), rounded to ``COST_DIGITS``."""
    if a is None:
        return b
    if b is None:
        return a
    return round(a + b, COST_DIGITS)


class LLMCall(BaseModel):
    """One LLM request an agent made, as the ``usage`` state update after it reports it (its
    ``value["added"]``, beside the tokens): what a trace's ``chat`` span is built from."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    model: str | None = None
    """The model asked."""
    finish_reason: str | None = None
    """Why it stopped, as the provider says (``stop``, ``tool_calls``, ``end_turn`` ...)."""
    response_id: str | None = None
    """The provider's id of the response (``llm_response_id`` on its tool calls)."""
    started_at: Timestamp | None = None
    """When the request was sent, UTC."""
    system_instructions: str | None = None
    """The system prompt the request carried: on the first request of each run only (the run's
    later ones carry the same), so a trace's ``chat`` spans show it without a copy per call."""
    provider: str | None = None
    """Whose price list the call was priced by (``openai``, ``anthropic`` ...), when known."""
    cost_source: Literal["backend", "price_table"] | None = None
    """Where ``cost_usd`` came from: the backend's own report, or the ``genai-prices`` table."""
    unpriced_reason: str | None = None
    """Why the call has no ``cost_usd`` (no price for its model), when it has none."""
    reported_cost_usd: float | None = None
    """What the backend itself reported this call (or turn) cost, its sub-agents included, when
    it reports one (Claude Code does): the tree's total follows it."""


class _Node(Protocol):
    subagent_id: str
    parent_subagent_id: str | None
    usage: Usage | None
    listed_subtree_usage: Usage | None


def usage_of(value: Any) -> Usage | None:
    """A ``Usage`` from a usage dict (a ``usage`` state value, a listed entry's), else ``None``."""
    if isinstance(value, Usage):
        return value
    return Usage.model_validate(value) if isinstance(value, dict) else None


def grown_by(usage: Usage | None) -> int:
    """How far ``usage`` has grown (figures only grow: a smaller one is an older report)."""
    if usage is None:
        return -1
    return usage.input_tokens + usage.output_tokens + usage.llm_calls


def subtree_usage(sub: _Node, every: Iterable[_Node]) -> Usage | None:
    """``sub``'s own usage plus that of every sub-agent below it (by ``parent_subagent_id``), or
    what the server listed when that is further along (a client that joined late)."""
    nodes = list(every)
    below: dict[str | None, list[_Node]] = {}
    for node in nodes:
        below.setdefault(node.parent_subagent_id, []).append(node)
    total: Usage | None = None
    frontier = [sub]
    while frontier:
        node = frontier.pop()
        if node.usage is not None:
            total = node.usage if total is None else total + node.usage
        frontier.extend(below.get(node.subagent_id, []))
    listed = sub.listed_subtree_usage
    return listed if grown_by(listed) > grown_by(total) else total
