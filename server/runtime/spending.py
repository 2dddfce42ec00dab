"""What a conversation and its subtree spend, priced, and the budgets that stop them.

A mixin of ``ConversationHost`` (its class stays small). After each model call a backend calls
``add_usage``: the call is priced (``pricing.py``), added to the agent's own usage (its record
and a ``key=usage`` state event, as before) and to the running total of its subtree and of each
ancestor's (``spent``); in a tree with sub-agents the root's stream gets ``key=tree_usage``,
the tree's total. Then every budget over the caller is checked (``budgets.py``), the root's
first: a crossing stops the agent whose budget it is and everything below it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Coroutine, TypeVar

from ..events import ConversationStateUpdateEvent, Event, LLMCall, Usage
from .budgets import Budget, BudgetExceeded, Crossing
from ..pricing import priced_call

if TYPE_CHECKING:
    from ..store import ConversationRecord, Store

T = TypeVar("T")

TREE_USAGE_KEY = "tree_usage"


class Spending:
    """``ConversationHost``'s usage, subtree totals and budgets."""

    record: ConversationRecord
    parent: Spending | None
    children: dict[str, Any]
    task: asyncio.Task[Any] | None
    managed: bool
    cancel_pending: bool
    conversation_id: str
    root_id: str
    _store: Store

    def _init_spending(self, new_stream: bool) -> None:
        self.spent: Usage | None = self.record.usage if new_stream else None
        """This conversation's usage and every sub-agent's below it (``None``: not read yet,
        a root loaded from the store whose tree may hold finished sub-agents)."""
        self.budget: Budget | None = Budget.of(self.record.agent)
        self.budget_stop: Crossing | None = None
        """The budget crossing that stopped (or is stopping) this agent: its own or an ancestor's."""
        self.has_subagents = False
        """A sub-agent was started in this tree since it was loaded (the root keeps ``tree_usage``)."""
        self._clock: asyncio.TimerHandle | None = None

    async def emit(self, event: Event, *, wait: bool = True) -> None:
        raise NotImplementedError

    async def whole(self, change: Coroutine[Any, Any, T]) -> T:
        raise NotImplementedError

    # -- usage ----------------------------------------------------------------------------

    async def add_usage(self, usage: Usage, call: LLMCall | None = None) -> None:
        """Add one model call's usage to this conversation's, priced, and tell subscribers the
        total (and, under ``added``, what this call added and what it cost). Raises
        ``BudgetExceeded`` in the agent's own run when a budget over it is passed."""
        usage, call = priced_call(usage, call)
        await self.whole(self._record_usage(usage, call))
        root = self._root()
        if root.has_subagents:
            assert root.spent is not None
            await root.emit(ConversationStateUpdateEvent(key=TREE_USAGE_KEY, value=root.spent.model_dump()), wait=False)
        self._check_budgets()
        if self.budget_stop is not None and self.task is not None and self.task is asyncio.current_task():
            raise BudgetExceeded(self.budget_stop)

    async def _record_usage(self, usage: Usage, call: LLMCall | None) -> None:
        # A live host is its record's one writer (recovery writes only rows no host holds): ``held``.
        total = self.record.usage + usage
        self.record = await self._store.update_conversation(self.conversation_id, held=self.record, usage=total)
        value = self.record.usage.model_dump()
        value["added"] = usage.model_dump() | (call.model_dump(mode="json", exclude_none=True) if call else {})
        await self.emit(ConversationStateUpdateEvent(key="usage", value=value), wait=False)
        # The running totals move with the record, in the same whole change: a caller cancelled
        # meanwhile never leaves a record counted and a total not (or the other way round).
        root = self._root()
        read = root.spent is None
        if read:
            await root._read_spent()  # the tree as stored: this call's record included
        node: Spending | None = self
        while node is not None:
            if not (read and node is root):
                node.spent = (node.spent or Usage()) + usage
            node = node.parent

    async def _read_spent(self) -> None:
        tree = await self._store.tree(self.root_id)
        total = Usage()
        for record in tree:
            total = total + record.usage
        self.spent = total
        self.has_subagents = self.has_subagents or len(tree) > 1

    def _root(self) -> Spending:
        node: Spending = self
        while node.parent is not None:
            node = node.parent
        return node

    # -- budgets --------------------------------------------------------------------------

    def _check_budgets(self) -> None:
        """Stop the topmost agent over this one (or this one) whose budget ``spent`` passes."""
        chain: list[Spending] = []
        node: Spending | None = self
        while node is not None:
            chain.append(node)
            node = node.parent
        for node in reversed(chain):
            if node.budget is None or node.budget_stop is not None or node.spent is None:
                continue
            crossed = node.budget.crossing(node.spent)
            if crossed is not None:
                node.stop_for(Crossing(*crossed, set_on=node.conversation_id, label=node.record.label or ""))
                return

    def stop_for(self, crossing: Crossing) -> None:
        """Stop this agent and everything below it for ``crossing`` (its own budget, or one over
        it): each is marked, and this agent's run is cancelled (its sub-agents go with it, in
        order, each parent recording its child's end). Called from the agent's own run, it
        raises ``BudgetExceeded`` there instead (``add_usage``)."""
        self._mark(crossing)
        if self.task is None:
            if self.managed:
                self.cancel_pending = True  # still being set up: stopped as it starts
            return
        if not self.task.done() and self.task is not asyncio.current_task():
            self.task.cancel(crossing.describe())

    def _mark(self, crossing: Crossing) -> None:
        if self.budget_stop is None:
            self.budget_stop = crossing
        for child in list(self.children.values()):
            child._mark(crossing)

    def start_clock(self) -> None:
        """Start this run's ``max_seconds`` clock (if the agent has one)."""
        self.stop_clock()
        seconds = self.budget.max_seconds if self.budget is not None else None
        if seconds is None:
            return
        loop = asyncio.get_running_loop()
        started = loop.time()

        def time_up() -> None:
            self._clock = None
            if self.budget_stop is None:
                crossing = Crossing("max_seconds", seconds, round(loop.time() - started, 3),
                                    set_on=self.conversation_id, label=self.record.label or "")
                self.stop_for(crossing)

        self._clock = loop.call_later(seconds, time_up)

    def stop_clock(self) -> None:
        if self._clock is not None:
            self._clock.cancel()
            self._clock = None
