"""TaskManager: runs sub-agents for ``task`` calls.

Each sub-agent is a child conversation in the same tree: its own stream, its own model
context (its type's system prompt and the ``prompt`` verbatim as its one user message). Its
events are stamped and forwarded by its host (``runtime/forwarding.py``); the parent gets only
the observation this module returns, which names the sub-agent by its deterministic label.
"""

from __future__ import annotations

import asyncio
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ..errors import BackendError, StoreUnavailable
from ..events import MessageEvent
from ..permissions.policy import NEVER, Approval
from .agent_types import SubagentType
from .budgets import TREE_LIMITS, Crossing, budget_problem
from .conversation import ConversationHost
from .tools.base import ToolResult
from ..settings import Settings

if TYPE_CHECKING:
    from ..hooks import Hooks

RunChild = Callable[[ConversationHost], Awaitable[str | None]]


class TaskManager:
    """Spawns, runs, cancels and reports sub-agents."""

    def __init__(self, settings: Settings, hooks: Hooks, run_child: RunChild) -> None:
        self.settings = settings
        self.hooks = hooks
        self._run_child = run_child
        self._types_of_run: weakref.WeakKeyDictionary[asyncio.Task[Any], dict[Path, dict[str, SubagentType]]] = (
            weakref.WeakKeyDictionary()
        )
        """The types read for each root's current run, by workspace (dropped with the run's task)."""

    def subagent_types(self, host: ConversationHost, *, fresh: bool = False) -> dict[str, SubagentType]:
        """The types a ``task`` call of ``host`` may name, read from the sources once per run of
        its root (``fresh``: read again): reading them (a glob, a stat per type file) for every
        call of a tree was 3-4 % of the server's loop with many trees. A file added or edited
        between runs is seen by the next run; not during one (but see ``run_task``)."""
        run = _root(host).task
        if run is None or run.done():  # not under a run of its root: nothing to share it with
            return self.hooks.subagent_types(host.workspace)
        read = self._types_of_run.setdefault(run, {})
        types = None if fresh else read.get(host.workspace)
        if types is None:
            types = read[host.workspace] = self.hooks.subagent_types(host.workspace)
        return types

    async def run_task(
        self,
        host: ConversationHost,
        tool_call_id: str,
        *,
        description: str,
        prompt: str,
        subagent_type: str,
    ) -> ToolResult:
        """Run one sub-agent to its end; the result is what the parent model sees."""
        types = self.subagent_types(host)
        agent_type = types.get(subagent_type)
        if agent_type is None:
            # Maybe its file was added during this run (a person asking for it now): read again
            # before saying it is unknown. Rare, so it costs what every call once did.
            types = self.subagent_types(host, fresh=True)
            agent_type = types.get(subagent_type)
        if agent_type is None:
            known = ", ".join(sorted(types)) or "(none)"
            return ToolResult(f"Unknown subagent_type {subagent_type!r}. Known types: {known}.", is_error=True)
        depth = _depth(host)
        if depth >= self.settings.max_subagent_depth:
            return ToolResult(
                f"Sub-agents may nest at most {self.settings.max_subagent_depth} levels deep; do this work yourself.",
                is_error=True,
            )
        agent = child_agent_spec(host.record.agent, agent_type, host.approval)
        problem = budget_problem(agent, self.settings, budgets_in_force(host, agent))
        if problem is not None:
            return ToolResult(f"Sub-agent type {agent_type.name!r} cannot run here: {problem}.", is_error=True)
        # The limit is per parent conversation: the calls of one response share it.
        async with host.subagent_slots(self.settings.max_parallel_subagents):
            child = await host.start_subagent(
                tool_call_id,
                subagent_type=agent_type.name,
                description=description,
                agent=agent,
                managed=True,
            )
            try:
                await child.emit(MessageEvent(role="user", source="user", content=prompt))
            except asyncio.CancelledError:
                # Cancelled between its start and its run (an interrupt while the prompt is
                # stored): it still gets its one end, or its stream would say it runs forever.
                await host.finish_subagent(child, status="cancelled", result="cancelled with its parent")
                raise
            child.deliver_user_message(prompt)
            return await self._supervise(host, child, agent_type)

    async def _supervise(self, host: ConversationHost, child: ConversationHost, agent_type: SubagentType) -> ToolResult:
        child.task = asyncio.create_task(self._run_child(child), name=f"subagent {child.label}")
        if child.cancel_pending:  # cancelled while it was being set up
            child.task.cancel()
        label = f"{child.label} ({agent_type.name})"
        try:
            answer = await asyncio.shield(child.task)
        except asyncio.CancelledError as exc:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                # The parent itself is being cancelled: take the child down with it (saying why,
                # so a permission request the child waits on is resolved with the reason).
                child.task.cancel(*exc.args[:1])
                await asyncio.wait({child.task})
                stop = child.budget_stop  # an ancestor's budget: said so, beside its stop_reason
                result = f"stopped by a budget: {stop.describe()}" if stop is not None else "cancelled with its parent"
                await host.finish_subagent(child, status="cancelled", result=result)
                raise
            if child.budget_stop is not None:
                return await self._stopped(host, child, label)
            await host.finish_subagent(child, status="cancelled", result="cancelled")
            return ToolResult(f"Sub-agent {label} was cancelled before it finished.", is_error=True)
        except (BackendError, StoreUnavailable) as exc:
            if isinstance(exc, BackendError) and exc.code == "max_iterations" and child.budget_stop is None:
                used = int(child.record.agent.get("max_iterations") or 50)
                child.budget_stop = Crossing("max_iterations", used, used, set_on=child.conversation_id,
                                             label=child.label)
            if child.budget_stop is not None:
                return await self._stopped(host, child, label)
            await host.finish_subagent(child, status="error", result=exc.detail)
            return ToolResult(f"Sub-agent {label} failed: {exc.detail}", is_error=True)
        answer = answer or ""
        await host.finish_subagent(child, status="completed", result=answer)
        return ToolResult(f"Sub-agent {label} completed.\n\n{answer}")

    async def _stopped(self, host: ConversationHost, child: ConversationHost, label: str) -> ToolResult:
        """A sub-agent a budget stopped (its own or an ancestor's): it ends ``error`` with the
        limit as its ``stop_reason``, and the parent model reads which budget and what was used."""
        crossing = child.budget_stop
        assert crossing is not None
        text = f"stopped by a budget: {crossing.describe()}"
        await host.finish_subagent(child, status="error", result=text)
        return ToolResult(f"Sub-agent {label} was {text}. Its work is unfinished.", is_error=True)

def child_agent_spec(
    parent_agent: dict[str, Any], agent_type: SubagentType, parent_approval: Approval = NEVER
) -> dict[str, Any]:
    """The agent a sub-agent runs: its type's backend if it names one, else the parent's LLM with
    the type's prompt, tools, model and iteration limit, and the parent's approval policy
    joined with the type's (a type only adds to it)."""
    if agent_type.agent:
        return {**agent_type.agent, **agent_type.budget}
    spec = {k: v for k, v in parent_agent.items() if k in ("kind", "llm", "max_iterations")}
    spec["kind"] = "native"
    spec["system_prompt"] = agent_type.system_prompt
    if agent_type.tools is not None:
        spec["tools"] = list(agent_type.tools)
    elif "tools" in parent_agent:
        spec["tools"] = parent_agent["tools"]
    if agent_type.model:
        spec["llm"] = {**(spec.get("llm") or {}), "model": agent_type.model}
    if agent_type.max_iterations:
        spec["max_iterations"] = agent_type.max_iterations
    spec.update(agent_type.budget)
    approval = parent_approval.union(agent_type.approval)
    if not approval.never:
        spec["approval"] = approval.spec()
    return spec


def _root(host: ConversationHost) -> ConversationHost:
    while host.parent is not None:
        host = host.parent
    return host


def _depth(host: ConversationHost) -> int:
    depth, node = 0, host
    while node.parent is not None:
        depth, node = depth + 1, node.parent
    return depth


def budgets_in_force(host: ConversationHost, agent: dict[str, Any]) -> set[str]:
    """The budgets a new sub-agent of ``host`` running ``agent`` would count towards: its own
    and the subtree budgets of ``host`` and every ancestor."""
    limits = {k for k in (*TREE_LIMITS, "max_iterations") if agent.get(k) is not None}
    node: ConversationHost | None = host
    while node is not None:
        limits.update(k for k in TREE_LIMITS if node.record.agent.get(k) is not None)
        node = node.parent
    return limits
