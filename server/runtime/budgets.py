"""Budgets: limits an agent cannot pass, and what a backend must report to be bounded.

An agent spec (and a sub-agent type's front matter) may set ``max_cost_usd``, ``max_tokens``
and ``max_seconds``, which cover the agent and every sub-agent below it, and ``max_iterations``,
which counts the agent's own model calls in a run (as it always has). A crossing stops the agent
whose budget it is at once (``ConversationHost`` carries it out, ``spending.py``): a sub-agent
ends with ``stop_reason`` naming the limit and its ``task`` result tells its parent; a root's
run is stopped with its whole tree and the root is ``paused`` with a ``status_reason``.

A backend is bounded by what it reports (``capabilities.py``): ``max_seconds`` needs
nothing (taskwire's own clock), ``max_tokens`` and ``max_cost_usd`` need its model calls'
usage as they happen (``AgentHost.add_usage``), and a price (the backend's own, or a model
the price table knows). A budget that cannot be checked is refused when the agent is
created (400 ``budget_not_checkable``), never silently ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from ..errors import BackendError, BadRequest
from ..events import Usage
from .capabilities import capabilities
from ..pricing import provider_of, unpriced_reason

LIMITS = ("max_cost_usd", "max_tokens", "max_iterations", "max_seconds")
"""The budget fields of an agent spec and a sub-agent type, in the order they are checked."""

TREE_LIMITS = ("max_cost_usd", "max_tokens", "max_seconds")
"""Budgets that cover the agent's whole subtree (``max_iterations`` is the agent's own)."""


@dataclass(frozen=True, slots=True)
class Budget:
    """One agent's limits (``None``: not set)."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None
    max_seconds: float | None = None

    @classmethod
    def of(cls, agent: dict[str, Any]) -> Budget | None:
        """The budget an agent spec sets over its subtree, or ``None``."""
        found = {k: agent.get(k) for k in TREE_LIMITS}
        return cls(**found) if any(v is not None for v in found.values()) else None

    def crossing(self, usage: Usage) -> tuple[str, float, float] | None:
        """``(limit, max, used)`` of the first budget ``usage`` passes, if any."""
        if self.max_cost_usd is not None and (usage.cost_usd or 0) > self.max_cost_usd:
            return "max_cost_usd", self.max_cost_usd, usage.cost_usd or 0
        if self.max_tokens is not None and usage.tokens > self.max_tokens:
            return "max_tokens", self.max_tokens, usage.tokens
        return None


@dataclass(frozen=True, slots=True)
class Crossing:
    """A budget passed: which, its figure, what was used, and whose budget it is."""

    limit: str
    max: float
    used: float
    set_on: str
    """The conversation id of the agent whose budget it is."""
    label: str = ""
    """That agent's label (``task-1``), empty for the root."""

    def describe(self) -> str:
        """The crossing in words, e.g. ``max_tokens budget passed: 1204 tokens used of 1000``."""
        whose = f" ({self.label}'s)" if self.label else ""
        return f"{self.limit} budget{whose} passed: {_figure(self.limit, self.used)} used of {_figure(self.limit, self.max)}"

    def public(self) -> dict[str, Any]:
        return {"limit": self.limit, "max": self.max, "used": self.used, "set_on": self.set_on}


class BudgetExceeded(BackendError):
    """The agent's run was stopped by a budget (its own or an ancestor's)."""

    code = "budget_exceeded"

    def __init__(self, crossing: Crossing) -> None:
        super().__init__(crossing.describe())
        self.crossing = crossing


def _figure(limit: str, value: float) -> str:
    if limit == "max_cost_usd":
        return f"${value:.6f}".rstrip("0").rstrip(".")
    if limit == "max_seconds":
        return f"{value:.1f} s"
    if limit == "max_tokens":
        return f"{int(value)} tokens"
    return f"{int(value)} model calls"


def budget_problem(agent: dict[str, Any], settings: Any, limits: Iterable[str] | None = None) -> str | None:
    """Why a budget cannot be checked on ``agent``'s backend, or ``None``. ``limits``: the budgets
    in force over it (its own and its ancestors'); default: those its own spec sets."""
    reports = capabilities(agent)
    if reports is None:
        return None
    wanted = [k for k in LIMITS if agent.get(k) is not None] if limits is None else list(limits)
    for limit in wanted:
        if limit == "max_seconds":
            continue  # taskwire's own clock
        if limit == "max_iterations":
            if reports.iterations is not None:
                return f"max_iterations cannot be checked: {reports.iterations}"
            continue
        if reports.usage is not None:
            return f"{limit} cannot be checked: {reports.usage}"
        if limit == "max_cost_usd" and not reports.own_cost:
            reason = unpriced_reason(*native_model(agent, settings))
            if reason is not None:
                return f"max_cost_usd cannot be checked: {reason}"
    return None


def native_model(agent: dict[str, Any], settings: Any) -> tuple[str | None, str | None]:
    """The model a native (or OpenHands) agent calls and the provider whose prices apply."""
    llm = settings.llm_defaults()
    llm.update({k: v for k, v in (agent.get("llm") or {}).items() if v is not None})
    model = llm.get("model") or settings.llm_model
    if agent.get("kind") == "openhands" and model and "/" in model:  # LiteLLM's name: provider first
        provider, _, name = model.partition("/")
        return name, provider
    return model, provider_of(llm.get("api"), llm.get("base_url"))


def check_budgets(agent: dict[str, Any], settings: Any) -> None:
    """Refuse (400 ``budget_not_checkable``) an agent whose budget its backend cannot be held to."""
    problem = budget_problem(agent, settings)
    if problem is not None:
        raise BadRequest(problem, code="budget_not_checkable")
