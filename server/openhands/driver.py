"""taskwire's OpenHands driver: runs in the OpenHands venv (Python 3.12), stdlib + openhands only.

    .venv-openhands/bin/python server/openhands/driver.py

It never imports taskwire (it runs under another interpreter). It speaks JSON lines
(docs/openhands.md, "Protocol"): commands on stdin, reports on a private duplicate of fd 1
(fd 1 itself is pointed at stderr first, since OpenHands' default visualizer prints there).

Every event of the main conversation and of every ``task`` sub-conversation is reported with the
id of the ``task`` call that spawned it and the chain of such ids above it. The stamp comes from
two public extension points, no patch: the root visualizer's ``create_sub_visualizer`` (which
TaskManager calls for each new sub-conversation, on the thread that runs the call) and a
``TaskToolSet`` registered under the same name whose executor learns the call's id first.
"""

from __future__ import annotations

import contextvars
import json
import os
import queue
import sys
import threading
import traceback
import uuid
from typing import Any

from driver_channel import Outbox, open_channel  # noqa: E402  (beside this file, on sys.path)

_channel = open_channel()

from openhands.sdk import LLM, Agent, Conversation, Tool  # noqa: E402
from openhands.sdk.conversation.state import ConversationExecutionStatus, ConversationState  # noqa: E402
from openhands.sdk.security.confirmation_policy import AlwaysConfirm  # noqa: E402
from openhands.sdk.conversation.visualizer.base import ConversationVisualizerBase  # noqa: E402
from openhands.sdk.event import ActionEvent  # noqa: E402
from openhands.sdk.tool import ToolExecutor, register_tool  # noqa: E402
from openhands.tools.task.definition import TaskToolSet  # noqa: E402


OUT = Outbox(_channel)
SPAWN: contextvars.ContextVar[tuple[str, tuple[str, ...], str] | None] = contextvars.ContextVar("spawn", default=None)
"""(the spawning call's id, the ids above it, its sub-agent type) while a ``task`` call starts."""
LIVE: dict[str, Any] = {}
"""Spawning call id -> the running sub-conversation's state (to pause it on interrupt)."""


def _safe(fn: Any) -> Any:
    """A callback OpenHands calls must never raise into it (that ends the agent's step)."""
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception:
            traceback.print_exc(file=sys.stderr)
            return None
    return wrapped


class StreamVisualizer(ConversationVisualizerBase):
    """Reports each event of one conversation, stamped; hands a stamped one to each sub-agent."""

    def __init__(self, ancestry: tuple[str, ...] = (), label: str | None = None, subagent_type: str | None = None) -> None:
        super().__init__()
        self.ancestry = ancestry
        self.label = label
        self.subagent_type = subagent_type

    @_safe
    def on_event(self, event: Any) -> None:
        if self.ancestry:
            LIVE[self.ancestry[-1]] = self._state
        OUT.put({
            "type": "event",
            "parent_tool_use_id": self.ancestry[-1] if self.ancestry else None,
            "ancestry": list(self.ancestry),
            "depth": len(self.ancestry),
            "label": self.label,
            "subagent_type": self.subagent_type,
            "event": event.model_dump(mode="json"),
        })

    def create_sub_visualizer(self, agent_id: str) -> StreamVisualizer:
        spawn = SPAWN.get()
        if spawn is None:  # not through our wrapper (should not happen): still keep stdout clean
            return StreamVisualizer(self.ancestry + (f"unknown:{agent_id}",), agent_id)
        call_id, ancestry, subagent_type = spawn
        return StreamVisualizer(ancestry + (call_id,), agent_id, subagent_type)


def _metrics_usage(state: Any) -> dict[str, int]:
    """Token counts of a conversation's LLM calls so far (OpenHands' own metrics)."""
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "llm_calls": 0}
    try:
        for key, metrics in state.stats.usage_to_metrics.items():
            if key.startswith("task:"):  # a sub-agent's, copied in when it ended: counted there
                continue
            for token in metrics.token_usages:
                usage["input_tokens"] += token.prompt_tokens or 0
                usage["output_tokens"] += token.completion_tokens or 0
                usage["cache_read_tokens"] += token.cache_read_tokens or 0
                usage["llm_calls"] += 1
    except Exception:
        traceback.print_exc(file=sys.stderr)
    return usage


class StampingExecutor(ToolExecutor):
    """Wraps TaskToolSet's executor: learns the spawning call's id, reports the result the
    moment this sub-agent ends (OpenHands publishes a batch's observations only when its
    slowest call is done)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __call__(self, action: Any, conversation: Any = None) -> Any:
        call_id = _call_id(action, conversation)
        outer = SPAWN.get()
        ancestry = outer[1] + (outer[0],) if outer is not None else ()
        if getattr(conversation, "_visualizer", None) is not None and isinstance(conversation._visualizer, StreamVisualizer):
            ancestry = conversation._visualizer.ancestry
        if getattr(action, "resume", None):
            observation = self._refuse_resume(action)
        else:
            token = SPAWN.set((call_id, ancestry, getattr(action, "subagent_type", "general-purpose")))
            try:
                observation = self.inner(action, conversation)
            finally:
                SPAWN.reset(token)
        state = LIVE.pop(call_id, None)
        OUT.put({
            "type": "task_result", "tool_call_id": call_id, "ancestry": list(ancestry),
            "status": str(getattr(observation, "status", "") or ""), "is_error": bool(observation.is_error),
            "text": observation.text, "usage": _metrics_usage(state) if state is not None else None,
        }, must=True)
        return observation

    def _refuse_resume(self, action: Any) -> Any:
        # A resumed sub-conversation gets no visualizer in 1.58.2 (TaskManager._resume_task), so
        # it could not be shown live: refused, with a reason the model reads.
        from openhands.tools.task.definition import TaskObservation
        return TaskObservation.from_text(
            "resume is not supported under taskwire (a resumed sub-agent could not be shown live); "
            "start a new task with the full context instead",
            is_error=True, task_id=str(action.resume), subagent=str(action.subagent_type), status="error",
        )

    def interrupt(self) -> None:
        pause_subagents()
        CONFIRM.refuse_all()


def _call_id(action: Any, conversation: Any) -> str:
    """The id of the ``task`` call whose action this is: its ActionEvent is already in the
    parent's log (emitted before execution), holding this very action object."""
    events = conversation.state.events
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if isinstance(event, ActionEvent) and event.action is action:
            return event.tool_call_id
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if isinstance(event, ActionEvent) and event.action == action:
            return event.tool_call_id
    return f"unmatched-{id(action)}"


class Confirmations:
    """OpenHands asks to confirm actions (confirmation mode): taskwire asks a person, in the
    agent that asks; the asking thread waits for the answer (``answer`` op)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next = 0
        self._waiting: dict[int, tuple[threading.Event, list[bool]]] = {}
        self.closed = False

    def ask(self, lane: str | None, ancestry: tuple[str, ...], pending: list[Any]) -> bool:
        with self._lock:
            if self.closed:
                return False
            self._next += 1
            request, done, answer = self._next, threading.Event(), [False]
            self._waiting[request] = (done, answer)
        actions = [{"tool_call_id": a.tool_call_id, "tool_name": a.tool_name,
                    "arguments": {k: v for k, v in a.action.model_dump(mode="json").items() if k != "kind"}}
                   for a in pending]
        OUT.put({"type": "confirm", "request": request, "parent_tool_use_id": lane, "ancestry": list(ancestry),
                 "actions": actions}, must=True)
        done.wait()
        return answer[0]

    def answer(self, request: int, allow: bool) -> None:
        with self._lock:
            waiting = self._waiting.pop(request, None)
        if waiting is not None:
            waiting[1][0] = allow
            waiting[0].set()

    def refuse_all(self, *, closing: bool = False) -> None:
        """Every waiting ask is refused (an interrupt; ``closing``: and every later one)."""
        with self._lock:
            self.closed = self.closed or closing
            waiting, self._waiting = list(self._waiting.values()), {}
        for done, _ in waiting:
            done.set()


CONFIRM = Confirmations()


def _confirm_subagent(task_id: str, pending: list[Any]) -> bool:
    """TaskManager's ``confirmation_handler``: runs in the sub-agent's thread, under its call."""
    spawn = SPAWN.get()
    if spawn is None:
        return False
    call_id, ancestry, _ = spawn
    return CONFIRM.ask(call_id, ancestry + (call_id,), pending)


class StampedTaskToolSet(TaskToolSet):
    """TaskToolSet whose ``task`` tool runs through ``StampingExecutor``, its sub-agents'
    confirmations asked through taskwire."""

    @classmethod
    def create(cls, conv_state: Any, **kwargs: Any) -> Any:
        kwargs["confirmation_handler"] = _confirm_subagent
        return [tool.set_executor(StampingExecutor(tool.executor)) for tool in TaskToolSet.create(conv_state, **kwargs)]


register_tool(TaskToolSet.name, StampedTaskToolSet)


def pause_subagents(only: str | None = None) -> None:
    """Pause running sub-conversations (each between its steps): every one, or the one that
    call ``only`` spawned. Its ``task`` call then ends in error, "stopped without finishing"."""
    for call_id, state in list(LIVE.items()):
        if only is not None and call_id != only:
            continue
        try:
            with state:
                state.execution_status = ConversationExecutionStatus.PAUSED
        except Exception:
            traceback.print_exc(file=sys.stderr)


def _register_subagents(files: list[str], workspace: str) -> None:
    """OpenHands' built-in sub-agent types, the workspace's own (``.agents/agents/*.md``), and
    the markdown files the spec names (OpenHands' agent file format)."""
    from pathlib import Path

    from openhands.sdk.subagent.registry import agent_definition_to_factory, register_agent_if_absent, register_file_agents
    from openhands.sdk.subagent.schema import AgentDefinition
    from openhands.tools.preset.default import register_builtins_agents

    for name in files:
        path = Path(workspace, name)
        # taskwire refused it at creation; the file may have become a link out since.
        if not path.resolve().is_relative_to(Path(workspace).resolve()):
            raise ValueError(f"subagent_types file {name!r} leads outside the workspace")
        definition = AgentDefinition.load(path)
        register_agent_if_absent(name=definition.name, factory_func=agent_definition_to_factory(definition, workspace),
                                 description=definition)
    register_file_agents(workspace)
    register_builtins_agents(enable_browser=False)


def _tool_names(names: list[str]) -> list[str]:
    """The spec's tool names, as registered in OpenHands (``task`` is the TaskToolSet)."""
    from openhands.tools.preset.default import register_default_tools
    register_default_tools(enable_browser=False)
    return [TaskToolSet.name if name == "task" else name for name in names]


class Driver:
    def __init__(self, config: dict[str, Any]) -> None:
        llm = config["llm"]
        _register_subagents(config.get("subagent_types") or [], config["workspace"])
        agent = Agent(
            llm=LLM(model=llm["model"], base_url=llm.get("base_url"), api_key=llm.get("api_key") or "none",
                    num_retries=int(llm.get("num_retries", 0)), usage_id="agent"),
            tools=[Tool(name=t) for t in _tool_names(config.get("tools") or ["task"])],
            tool_concurrency_limit=int(config.get("tool_concurrency_limit") or 4),
        )
        self.conversation = Conversation(
            agent=agent, workspace=config["workspace"], persistence_dir=config.get("persistence_dir"),
            conversation_id=uuid.UUID(config["conversation_id"]) if config.get("conversation_id") else None,
            visualizer=StreamVisualizer(), max_iteration_per_run=int(config.get("max_iterations") or 50),
        )
        if config.get("confirmation") == "always":
            self.conversation.set_confirmation_policy(AlwaysConfirm())
        self.inbox: queue.Queue[str | None] = queue.Queue()
        self.runner = threading.Thread(target=self._run, name="taskwire-run", daemon=True)

    def _run(self) -> None:
        while (text := self.inbox.get()) is not None:
            try:
                self.conversation.send_message(text)
                self.conversation.run()
                state = self.conversation.state
                while state.execution_status == ConversationExecutionStatus.WAITING_FOR_CONFIRMATION:
                    pending = ConversationState.get_unmatched_actions(state.events)
                    if not pending:
                        break
                    if not CONFIRM.ask(None, (), pending):
                        self.conversation.reject_pending_actions("A person rejected the actions")
                    self.conversation.run()
                OUT.put({"type": "run_end", "status": str(state.execution_status.value),
                         "usage": _metrics_usage(state)}, must=True)
            except Exception as exc:
                traceback.print_exc(file=sys.stderr)
                OUT.put({"type": "run_end", "status": "error", "error": f"{type(exc).__name__}: {exc}",
                         "usage": _metrics_usage(self.conversation.state)}, must=True)

    def interrupt(self) -> None:
        pause_subagents()
        CONFIRM.refuse_all()
        # pause() waits for the state lock, held for the whole step (sub-agents included).
        threading.Thread(target=_safe(self.conversation.pause), name="taskwire-pause", daemon=True).start()


def main() -> int:
    first = sys.stdin.readline()
    try:
        config = json.loads(first)
        driver = Driver(config["config"])
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        OUT.put({"type": "fatal", "code": "bad_agent", "error": f"{type(exc).__name__}: {exc}"}, must=True)
        OUT.close()
        return 2
    from importlib.metadata import version
    OUT.put({"type": "ready", "openhands_sdk": version("openhands-sdk"), "pid": os.getpid()}, must=True)
    driver.runner.start()
    for line in sys.stdin:
        try:
            command = json.loads(line)
        except ValueError:
            continue
        op = command.get("op")
        if op == "message":
            driver.inbox.put(str(command.get("text", "")))
        elif op == "interrupt":
            driver.interrupt()
        elif op == "answer":
            CONFIRM.answer(int(command.get("request") or 0), bool(command.get("allow")))
        elif op == "stop_subagent":
            pause_subagents(str(command.get("tool_call_id")))
        elif op == "shutdown":
            break
    CONFIRM.refuse_all(closing=True)
    driver.inbox.put(None)
    OUT.close()
    return 0


if __name__ == "__main__":
    os._exit(main())
