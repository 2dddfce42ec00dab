"""Stamp every event of OpenHands' ``task`` sub-agents with the call that spawned them.

The one implementation of the stamp, shared by the agent-server plugin (this package) and by
taskwire's own OpenHands process (``kind: openhands``, ``server/openhands/driver.py``), which
imports this very module. It needs openhands-sdk and openhands-tools only, never the agent-server.

OpenHands' events have no field for a parent call and its ``TaskManager`` gives
sub-conversations no callbacks. Two public extension points suffice:

1. ``task_tool_set`` is registered again (``install``) with a subclass whose ``task`` executor
   wraps OpenHands' own. It finds the call's ``tool_call_id`` (the parent's ``ActionEvent``
   holding that very action object, already in the parent's log) and puts the call in a
   context variable while OpenHands starts the sub-agent on that thread.
2. ``TaskManager`` asks the parent conversation's visualizer for a sub-visualizer
   (``create_sub_visualizer``) on that same thread. Ours reads the context variable and returns
   a visualizer stamped with the call; OpenHands puts it first in the sub-conversation's
   callback chain, so it sees every event, and hands it the sub-conversation's state (whose id
   is the sub-agent's stable id). A sub-agent's own ``task`` calls nest the same way; the
   innermost call is the stamp.

Usage (the plugin and the driver differ only in how the root gets its visualizer)::

    stamper = SubagentStamper(on_event=lambda stamp, event: ...)
    install()                                   # once per process, before agents are built
    Conversation(agent, visualizer=stamper.visualizer(), ...)    # a conversation you build
    stamper.attach(conversation)                # or one someone else built with visualizer=None

``on_event(stamp, event)`` runs on OpenHands' thread while it holds the sub-conversation's state
lock: it must be quick and must not raise (exceptions are logged and swallowed here, since one
raised into OpenHands would end the agent's step). A resumed task (``task`` with ``resume=``)
gets no visualizer from OpenHands 1.58.2 (``TaskManager._resume_task``): with
``resume="forward"`` its events are read from what OpenHands persists for it while the call runs
(``resumed.py``); ``resume="refuse"`` answers the model with an error instead.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from openhands.sdk.conversation.visualizer.base import ConversationVisualizerBase
from openhands.sdk.event import ActionEvent, Event
from openhands.sdk.tool import ToolExecutor, register_tool
from openhands.tools.task.definition import TaskObservation, TaskToolSet


from .stamps import OnEvent, OnTaskEnd, Stamp, TaskCall, TaskEnd

__all__ = ["OnEvent", "OnTaskEnd", "Stamp", "StampedTaskToolSet", "StampingVisualizer", "SubagentStamper", "TaskCall",
           "TaskEnd", "current_call", "install"]
logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Spawn:
    call: TaskCall
    owner: StampingVisualizer
    """The visualizer of the conversation that made the call: only it hands out the stamp."""
    label_hint: str


_SPAWN: contextvars.ContextVar[_Spawn | None] = contextvars.ContextVar("taskwire_openhands_spawn", default=None)


def call_safely(what: str, fn: Callable[..., Any], *args: Any) -> None:
    try:
        fn(*args)
    except Exception:  # never into OpenHands: compose_callbacks would end the step
        logger.exception("taskwire-openhands: %s failed", what)


class StampingVisualizer(ConversationVisualizerBase):
    """The visualizer of one conversation of the tree: reports its events with its stamp (the
    root's with none) and hands a stamped one to each sub-agent it starts. Built without
    arguments (OpenHands' fork builds ``type(visualizer)()``) it is inert."""

    def __init__(self, stamper: SubagentStamper | None = None, call: TaskCall | None = None, label: str = "") -> None:
        super().__init__()
        self.stamper = stamper
        self.call = call
        self.label = label
        self.stamp: Stamp | None = None

    def on_event(self, event: Event) -> None:
        stamper = self.stamper
        if stamper is None:
            return
        if self.call is None:
            if stamper.root_events:
                call_safely("on_event", stamper.on_event, None, event)
            return
        if self.stamp is None:
            self.stamp = self._make_stamp()
            stamper.started(self)
        call_safely("on_event", stamper.on_event, self.stamp, event)

    def _make_stamp(self) -> Stamp:
        assert self.call is not None
        state = self._state
        return Stamp(
            parent_tool_use_id=self.call.tool_call_id, subagent_id=str(state.id) if state is not None else "",
            ancestry=self.call.ancestry, parent_subagent_id=self.call.parent_subagent_id,
            subagent_type=self.call.subagent_type, label=self.label, depth=self.call.depth,
            persistence_dir=getattr(state, "persistence_dir", None),
        )

    @property
    def state(self) -> Any:
        """The conversation's ``ConversationState`` once OpenHands has initialized us."""
        return self._state

    def create_sub_visualizer(self, agent_id: str) -> ConversationVisualizerBase | None:
        spawn = _SPAWN.get()
        if self.stamper is None or spawn is None or spawn.owner is not self:
            return None  # not a task call of this conversation (an agent hook, DelegateTool)
        return StampingVisualizer(self.stamper, spawn.call, agent_id or spawn.label_hint)


class SubagentStamper:
    """The stamping of one root conversation's tree."""

    def __init__(self, on_event: OnEvent, *, on_task_end: OnTaskEnd | None = None, root_events: bool = False,
                 resume: Literal["forward", "refuse"] = "forward") -> None:
        self.on_event = on_event
        self.on_task_end = on_task_end
        self.root_events = root_events
        self.resume = resume
        self._lock = threading.Lock()
        self._live: dict[str, StampingVisualizer] = {}
        self._tasks: dict[tuple[str, str], Stamp] = {}
        """(calling conversation id, OpenHands task id) -> the sub-agent's stamp, for resumes."""

    def visualizer(self) -> StampingVisualizer:
        """The root visualizer, for a ``Conversation`` you build (``visualizer=``)."""
        return StampingVisualizer(self)

    def attach(self, conversation: Any) -> bool:
        """Stamp the sub-agents of a conversation built without a visualizer (the agent-server
        builds its conversations with ``visualizer=None``). Its own events are not reported
        (its callback chain was composed at construction). False if it has another visualizer."""
        current = getattr(conversation, "_visualizer", None)
        if isinstance(current, StampingVisualizer) and current.stamper is self:
            return True
        if current is not None:
            return False
        root = StampingVisualizer(self)
        root.initialize(conversation.state)
        conversation._visualizer = root  # TaskManager reads it (contract.py)
        return True

    def started(self, visualizer: StampingVisualizer) -> None:
        assert visualizer.call is not None
        with self._lock:
            self._live[visualizer.call.tool_call_id] = visualizer

    def runs(self, call: TaskCall) -> bool:
        """Whether ``call`` is one of this tree's, its sub-agent running (a process serving many
        trees finds the one a sub-agent's confirmation belongs to; call ids may repeat across trees)."""
        with self._lock:
            visualizer = self._live.get(call.tool_call_id)
        return visualizer is not None and visualizer.call is call

    def live(self) -> dict[str, Any]:
        """Running sub-agents: spawning call id -> the sub-conversation's ``ConversationState``."""
        with self._lock:
            return {call_id: v.state for call_id, v in self._live.items() if v.state is not None}

    def say(self, tool_call_id: str, text: str) -> str | None:
        """Hand a person's message to the running sub-agent ``tool_call_id`` spawned: a user
        message in its history, which its next model call reads (OpenHands holds the
        conversation's state lock for a whole step, so this waits for the step in flight to end).
        It is not reported through ``on_event`` (the caller records it). ``None`` when delivered,
        else why not."""
        from openhands.sdk.conversation.state import ConversationExecutionStatus
        from openhands.sdk.event import MessageEvent
        from openhands.sdk.llm import Message, TextContent

        state = self.live().get(tool_call_id)
        if state is None:
            return "the sub-agent is not running"
        with state:
            if state.execution_status != ConversationExecutionStatus.RUNNING:
                return f"the sub-agent is {state.execution_status.value}"
            # append_event, not events.append: it links the event into the history (HEAD) that
            # the next request is built from.
            message = Message(role="user", content=[TextContent(text=text)])
            state.append_event(MessageEvent(source="user", llm_message=message))
        return None

    def pause(self, tool_call_id: str | None = None) -> None:
        """Pause running sub-agents between their steps (every one, or the one that call
        spawned): its ``task`` call then ends in error, "stopped without finishing"."""
        from openhands.sdk.conversation.state import ConversationExecutionStatus

        for call_id, state in self.live().items():
            if tool_call_id is None or call_id == tool_call_id:
                try:
                    with state:
                        state.execution_status = ConversationExecutionStatus.PAUSED
                except Exception:
                    logger.exception("taskwire-openhands: pausing the sub-agent of %s failed", call_id)

    @staticmethod
    def _call_of(action: Any, conversation: Any, owner: StampingVisualizer) -> TaskCall:
        parent = owner.stamp
        call_id = find_tool_call_id(action, conversation)
        return TaskCall(
            tool_call_id=call_id, ancestry=(parent.ancestry if parent else ()) + (call_id,),
            subagent_type=getattr(action, "subagent_type", None) or "general-purpose",
            description=getattr(action, "description", None), resume=getattr(action, "resume", None),
            parent_subagent_id=parent.subagent_id if parent else None,
        )

    def run_task(self, inner: Callable[[Any, Any], Any], action: Any, conversation: Any, owner: StampingVisualizer) -> Any:
        """Run one ``task`` call with its stamp in place (the executor's body)."""
        try:
            call, conversation_id = self._call_of(action, conversation, owner), str(conversation.state.id)
        except Exception:  # ours must never fail the call: it runs unstamped
            logger.exception("taskwire-openhands: this task call is not stamped")
            return inner(action, conversation)
        call_id = call.tool_call_id
        previous = self._tasks.get((conversation_id, call.resume)) if call.resume else None
        visualizer = tail = None
        if call.resume and self.resume == "refuse":
            observation = refused_resume(action)
        else:
            if previous is not None:
                from .resumed import ResumedTail  # it builds on this module
                tail = ResumedTail(self, call, previous)
            token = _SPAWN.set(_Spawn(call, owner, call.description or call.tool_call_id))
            try:
                observation = inner(action, conversation)
            finally:
                _SPAWN.reset(token)
                if tail is not None:
                    tail.stop()
                with self._lock:
                    visualizer = self._live.pop(call_id, None)
        stamp = visualizer.stamp if visualizer is not None else tail.stamp if tail is not None else None
        task_id = getattr(observation, "task_id", None)
        if stamp is not None and task_id:
            with self._lock:
                self._tasks[(conversation_id, task_id)] = stamp
        if self.on_task_end is not None:
            state = visualizer.state if visualizer is not None else None
            call_safely("on_task_end", self.on_task_end, TaskEnd(call, stamp, observation, state))
        return observation


def find_tool_call_id(action: Any, conversation: Any) -> str:
    """The id of the ``task`` call whose action this is: its ``ActionEvent``, holding this very
    action object, is already in the calling conversation's log (emitted before execution)."""
    events = conversation.state.events
    for same in (lambda a: a is action, lambda a: a == action):
        for index in range(len(events) - 1, -1, -1):
            event = events[index]
            if isinstance(event, ActionEvent) and same(event.action):
                return event.tool_call_id
    return f"unmatched-{id(action):x}"


def refused_resume(action: Any) -> TaskObservation:
    """The error the model reads when resumes are refused (``resume="refuse"``)."""
    return TaskObservation.from_text(
        "resume is not supported here (a resumed sub-agent could not be shown live); "
        "start a new task with the full context instead",
        is_error=True, task_id=str(action.resume), subagent=str(action.subagent_type), status="error",
    )


Resolver = Callable[[Any], "SubagentStamper | None"]
"""Given a conversation whose visualizer is not ours (the agent-server's root), the stamper to
attach to it, or ``None`` to leave it alone."""


@dataclass
class _Installed:
    resolve: Resolver | None = None
    confirmation_handler: Callable[[str, list[Any]], bool] | None = None


# OpenHands' tool registry is one per process, so is what we register in it.
_INSTALLED = _Installed()
_ATTACH_LOCK = threading.Lock()
RESUMED: dict[str, StampingVisualizer] = {}
"""Sub-conversation id -> the stamped visualizer of its resumed run, while that run lasts."""


def _owner(conversation: Any) -> StampingVisualizer | None:
    """The visualizer through which this conversation's task calls are stamped, if any."""
    current = getattr(conversation, "_visualizer", None)
    if isinstance(current, StampingVisualizer) and current.stamper is not None:
        return current
    resumed = RESUMED.get(str(conversation.state.id))
    if resumed is not None:  # a resumed sub-agent's own task calls (OpenHands gave it no visualizer of ours)
        with _ATTACH_LOCK:
            if resumed.state is None:
                resumed.initialize(conversation.state)
            conversation._visualizer = resumed  # TaskManager reads it (contract.py)
        return resumed
    resolve = _INSTALLED.resolve
    if resolve is None or current is not None:
        return None
    stamper = resolve(conversation)  # may wait on a server's loop: not under the lock
    if stamper is None:
        return None
    with _ATTACH_LOCK:  # parallel first calls of one conversation: the first attach wins
        current = getattr(conversation, "_visualizer", None)
        if isinstance(current, StampingVisualizer):
            return current if current.stamper is not None else None
        return conversation._visualizer if stamper.attach(conversation) else None


class StampingExecutor(ToolExecutor):
    """Wraps ``TaskToolSet``'s executor: runs each call through its conversation's stamper."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __call__(self, action: Any, conversation: Any = None) -> Any:
        try:
            owner = _owner(conversation) if conversation is not None else None
        except Exception:  # ours must never fail the call: it runs unstamped
            logger.exception("taskwire-openhands: this task call is not stamped")
            owner = None
        if owner is None or owner.stamper is None:
            return self.inner(action, conversation)
        return owner.stamper.run_task(self.inner, action, conversation, owner)

    def close(self) -> None:
        self.inner.close()


class StampedTaskToolSet(TaskToolSet):
    """``TaskToolSet`` (same name, schema and description) whose ``task`` calls are stamped."""

    @classmethod
    def create(cls, conv_state: Any, **kwargs: Any) -> Any:
        if _INSTALLED.confirmation_handler is not None:
            kwargs.setdefault("confirmation_handler", _INSTALLED.confirmation_handler)
        return [tool.set_executor(StampingExecutor(tool.executor)) for tool in TaskToolSet.create(conv_state, **kwargs)]


def install(*, resolve: Resolver | None = None,
            confirmation_handler: Callable[[str, list[Any]], bool] | None = None) -> None:
    """Register the stamped ``task_tool_set`` in OpenHands' tool registry (idempotent; the last
    call's arguments win). ``resolve`` attaches a stamper to conversations built without our
    visualizer; ``confirmation_handler`` is passed to ``TaskToolSet.create`` (OpenHands calls it
    on the sub-agent's thread: ``current_call()`` says which call asks)."""
    _INSTALLED.resolve = resolve
    _INSTALLED.confirmation_handler = confirmation_handler
    register_tool(TaskToolSet.name, StampedTaskToolSet)


def current_call() -> TaskCall | None:
    """The ``task`` call whose sub-agent runs on this thread (innermost), if any."""
    spawn = _SPAWN.get()
    return spawn.call if spawn is not None else None
