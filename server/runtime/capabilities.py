"""What each backend kind can do for steering, pricing and budgets: the interface a backend
opts in through.

To be **steerable**, a backend either takes the messages ``AgentHost.take_user_messages``
hands it before each model call (``steer=None`` here: a person's message sent to a sub-agent
it runs is delivered through the host's inbox), or sets ``host.steer_hook`` (``steer_by_hook``:
on its own host when it runs a task's sub-agent, as the ``claude_sdk`` backend does; or on the
host ``start_subagent`` returned, for a sub-agent its peer runs inside its own turn): an async
callable that hands the text to the peer before that agent's next model call (raising a
``TaskwireError`` whose detail says why if the peer refuses). Otherwise a steering request is a 409
``subagent_not_steerable`` with ``steer`` as the reason.

To **report usage**, it calls ``AgentHost.add_usage(usage, LLMCall(model=..., provider=...))``
after each model call as it happens (``usage=None`` here); a usage that carries ``cost_usd``
is the backend's own figure and is kept (``own_cost``), else the call is priced from the table.

To be **bounded**, its run must stop when its task is cancelled (closing its open calls by
the closing rule), as every backend's does for an interrupt; ``max_iterations`` also needs its
model calls counted one by one (``iterations=None``). Budgets a kind cannot be held to are
refused when the agent is created (``budgets.budget_problem``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BackendCapabilities:
    """One backend kind's answers (``None``: it can; a string: why it cannot)."""

    steer: str | None
    """Whether a sub-agent it runs for a ``task`` call takes a person's message before its next
    model call."""
    usage: str | None
    """Whether each model call's usage is reported as it happens (``max_tokens``, ``max_cost_usd``)."""
    iterations: str | None
    """Whether its model calls are counted one by one (``max_iterations``)."""
    own_cost: bool = False
    """It reports its own cost, so the price table need not know its model."""
    steer_by_hook: bool = False
    """A sub-agent it runs takes a message through the ``steer_hook`` its backend sets once it
    runs (not the inbox, which its run reads only between turns)."""


CAPABILITIES: dict[str, BackendCapabilities] = {
    "native": BackendCapabilities(steer=None, usage=None, iterations=None),
    "claude_sdk": BackendCapabilities(
        steer=None,
        steer_by_hook=True,  # Claude Code folds a prompt sent mid-turn into its next model request
        usage=None,
        iterations="Claude Code counts its own turns (use the spec's max_turns)",
        own_cost=True,
    ),
    "acp": BackendCapabilities(
        steer="an ACP agent takes one prompt at a time: a message would wait for the end of its turn",
        usage="an acp agent reports its usage only when its turn ends, too late to stop it",
        iterations="an acp agent does not report its model calls one by one",
    ),
    "openhands": BackendCapabilities(
        steer=None,
        steer_by_hook=True,  # a message joins the sub-conversation's history after its step in flight
        usage=None,  # each model call of each lane, as it happens (the driver reads OpenHands' metrics)
        iterations=None,  # its spec's max_iterations is OpenHands' own max_iteration_per_run
    ),
}

PEER_SUBAGENT = (
    "this sub-agent runs inside its external agent's own turn, and that agent offers no way to send it a "
    "message (Claude Code's sub-agents take none over ACP or the Claude Agent SDK)"
)
"""Why a peer's own sub-agent without a ``steer_hook`` cannot be steered."""


def capabilities(agent: dict) -> BackendCapabilities | None:
    """The capabilities of the backend an agent spec names (``None``: an unknown kind)."""
    return CAPABILITIES.get(agent.get("kind", "native"))
