"""taskwire's OpenHands process: runs in the OpenHands venv (Python 3.12), stdlib + openhands +
``taskwire_openhands.stamping`` only.

    .venv-openhands/bin/python server/openhands/driver.py

One process serves every ``kind: openhands`` conversation of a taskwire server, as OpenHands'
own agent-server serves all of its conversations: a ``Session`` per conversation, each with its
OpenHands ``Conversation`` and a thread that runs it. It never imports taskwire (it runs under
another interpreter). It speaks JSON lines (``protocol.py``): commands on stdin, reports on a
private duplicate of fd 1 (fd 1 itself is pointed at stderr first, since OpenHands prints there).

Every event of a conversation and of its ``task`` sub-conversations is stamped by the one
implementation the agent-server plugin uses too (``taskwire_openhands.stamping``).
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import traceback
import uuid
from pathlib import Path
from typing import Any

from driver_channel import Outbox, open_channel  # noqa: E402  (beside this file, on sys.path)

_channel = open_channel()

try:
    import taskwire_openhands  # noqa: F401  (installed beside OpenHands by `make openhands`)
except ImportError:  # a checkout's copy, for an interpreter that lacks it
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "openhands-agent-server"))

from openhands.sdk import LLM, Agent, Conversation, Tool  # noqa: E402
from openhands.sdk.conversation.state import ConversationExecutionStatus, ConversationState  # noqa: E402
from openhands.sdk.security.confirmation_policy import AlwaysConfirm  # noqa: E402
from openhands.tools.task.definition import TaskToolSet  # noqa: E402
from taskwire_openhands.stamping import SubagentStamper, TaskEnd, current_call, install  # noqa: E402

OUT = Outbox(_channel)
SESSIONS: dict[str, Session] = {}
"""Conversation id -> its session."""
CLOSING: dict[str, Session] = {}
"""Sessions being closed, until their close is done (a new session of theirs waits for it)."""
CLOSE_WAIT = 30.0
"""Seconds a new session of a conversation waits for its previous run's thread to end (an
interrupt it could not honour in time; OpenHands' persisted state must have one writer)."""


class CallCounter:
    """Each model call of each conversation of a tree, once: OpenHands' metrics hold one token
    usage per call (``usage_to_metrics``), read after each event the agent emits."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str | None, str], int] = {}

    def new_calls(self, lane: str | None, state: Any) -> list[dict[str, Any]]:
        """The calls of ``lane``'s conversation not reported yet: model and tokens each."""
        calls = []
        try:
            for key, metrics in list(state.stats.usage_to_metrics.items()):
                if key.startswith("task:"):  # a sub-agent's, copied in when it ended: its own lane's
                    continue
                seen = self._seen.get((lane, key), 0)
                usages = list(metrics.token_usages)
                for token in usages[seen:]:
                    calls.append({"model": token.model or metrics.model_name, "usage": {
                        "input_tokens": token.prompt_tokens or 0, "output_tokens": token.completion_tokens or 0,
                        "cache_read_tokens": token.cache_read_tokens or 0,
                        "cache_write_tokens": token.cache_write_tokens or 0, "llm_calls": 1}})
                self._seen[(lane, key)] = len(usages)
        except Exception:
            traceback.print_exc(file=sys.stderr)
        return calls


class Confirmations:
    """OpenHands asks to confirm actions (confirmation mode): taskwire asks a person, in the
    agent that asks; the asking thread waits for the answer (``answer`` op)."""

    def __init__(self, session: Session) -> None:
        self._session = session
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
        self._session.report({"type": "confirm", "request": request, "parent_tool_use_id": lane,
                              "ancestry": list(ancestry), "actions": actions}, must=True)
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


def _confirm_subagent(task_id: str, pending: list[Any]) -> bool:
    """TaskManager's ``confirmation_handler``: runs in the sub-agent's thread, under its call;
    asked in the conversation whose tree made that call."""
    call = current_call()
    if call is None:
        return False
    for session in list(SESSIONS.values()):
        if session.stamper.runs(call):
            return session.confirm.ask(call.tool_call_id, call.ancestry, pending)
    return False


def _register_subagents(files: list[str], workspace: str) -> None:
    """OpenHands' built-in sub-agent types, the workspace's own (``.agents/agents/*.md``), and
    the markdown files the spec names (OpenHands' agent file format). OpenHands' registry is one
    per process (as in its agent-server): the first definition of a name wins."""
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


def _tools(names: list[str] | None) -> list[Tool]:
    """The spec's tools as registered in OpenHands (``task`` is the TaskToolSet); none named:
    OpenHands' own default tools (its default preset, no browser) and ``task``."""
    from openhands.tools.preset.default import get_default_tools, register_default_tools

    register_default_tools(enable_browser=False)
    if not names:
        defaults = [t for t in get_default_tools(enable_browser=False) if t.name != TaskToolSet.name]
        return [*defaults, Tool(name=TaskToolSet.name)]
    return [Tool(name=TaskToolSet.name if name == "task" else name) for name in names]


class Session:
    """One taskwire conversation in this process: its OpenHands ``Conversation``, its stamper,
    its confirmations, and the thread that runs it on each message."""

    def __init__(self, conversation_id: str, config: dict[str, Any]) -> None:
        self.id = conversation_id
        self.closed = False
        self.confirm = Confirmations(self)
        self.stamper = SubagentStamper(self._on_event, on_task_end=self._on_task_end, root_events=True,
                                       resume="refuse")
        self.calls = CallCounter()
        llm = config["llm"]
        _register_subagents(config.get("subagent_types") or [], config["workspace"])
        agent = Agent(
            llm=LLM(model=llm["model"], base_url=llm.get("base_url"), api_key=llm.get("api_key") or "none",
                    num_retries=int(llm.get("num_retries") or 0), retry_min_wait=int(llm.get("retry_min_wait") or 1),
                    retry_max_wait=int(llm.get("retry_max_wait") or 30), timeout=llm.get("timeout"),
                    usage_id="agent"),
            tools=_tools(config.get("tools")),
            tool_concurrency_limit=int(config.get("tool_concurrency_limit") or 4),
        )
        self.conversation = Conversation(
            agent=agent, workspace=config["workspace"], persistence_dir=config.get("persistence_dir"),
            conversation_id=uuid.UUID(config["conversation_id"]) if config.get("conversation_id") else None,
            visualizer=self.stamper.visualizer(), max_iteration_per_run=int(config.get("max_iterations") or 50),
        )
        if config.get("confirmation") == "always":
            self.conversation.set_confirmation_policy(AlwaysConfirm())
        self.calls.new_calls(None, self.conversation.state)  # a history's calls were counted before
        self.inbox: queue.Queue[str | None] = queue.Queue()
        self.runner = threading.Thread(target=self._run, name=f"taskwire-run-{conversation_id[:8]}", daemon=True)

    def report(self, message: dict[str, Any], *, must: bool = False) -> None:
        """One report of this conversation; none once it is closed (taskwire stopped reading it)."""
        if not self.closed:
            OUT.put({"type": message.pop("type"), "conversation": self.id, **message}, must=must)

    def _on_event(self, stamp: Any, event: Any) -> None:
        lane = stamp.parent_tool_use_id if stamp else None
        if getattr(event, "source", None) == "agent":  # after a model call: its usage, first
            state = self.stamper.live().get(lane) if lane else self.conversation.state
            for call in self.calls.new_calls(lane, state) if state is not None else ():
                self.report({"type": "llm_call", "parent_tool_use_id": lane, **call})
        self.report({
            "type": "event",
            "parent_tool_use_id": stamp.parent_tool_use_id if stamp else None,
            "ancestry": list(stamp.ancestry) if stamp else [],
            "depth": stamp.depth if stamp else 0,
            "label": stamp.label if stamp else None,
            "subagent_type": stamp.subagent_type if stamp else None,
            "event": event.model_dump(mode="json"),
        })

    def _on_task_end(self, end: TaskEnd) -> None:
        # Sent the moment this sub-agent ends (OpenHands publishes a batch's observations only
        # when its slowest call is done).
        observation = end.observation
        self.report({
            "type": "task_result", "tool_call_id": end.call.tool_call_id, "ancestry": list(end.call.ancestry[:-1]),
            "status": str(getattr(observation, "status", "") or ""), "is_error": bool(observation.is_error),
            "text": observation.text,
        }, must=True)

    def _run(self) -> None:
        while (text := self.inbox.get()) is not None:
            try:
                self.conversation.send_message(text)
                self.conversation.run()
                state = self.conversation.state
                while state.execution_status == ConversationExecutionStatus.WAITING_FOR_CONFIRMATION:
                    pending = ConversationState.get_unmatched_actions(state.events)
                    if not pending or self.closed:
                        break
                    if not self.confirm.ask(None, (), pending):
                        self.conversation.reject_pending_actions("A person rejected the actions")
                    self.conversation.run()
                self.report({"type": "run_end", "status": str(state.execution_status.value)}, must=True)
            except Exception as exc:
                traceback.print_exc(file=sys.stderr)
                self.report({"type": "run_end", "status": "error", "error": f"{type(exc).__name__}: {exc}"}, must=True)

    def interrupt(self) -> None:
        """Pause the running sub-agents, refuse waiting confirmations, end the tool calls in
        flight (a terminal command gets a Ctrl-C: OpenHands' synchronous ``run`` does not do it
        on ``pause``), then pause the main agent (between its steps: ``pause`` waits for the
        state lock, held for a whole step)."""
        self.stamper.pause()
        self.confirm.refuse_all()
        self._interrupt_tools()
        threading.Thread(target=_quietly(self.conversation.pause), name="taskwire-pause", daemon=True).start()

    def _interrupt_tools(self) -> None:
        agents = [self.conversation.agent, *(state.agent for state in self.stamper.live().values())]
        for agent in agents:
            for tool in list(agent.tools_map.values()):
                if tool.executor is not None:
                    _quietly(tool.executor.interrupt)()

    def steer(self, tool_call_id: str, text: str) -> None:
        """A person's message to one running sub-agent, before its next model call (on a thread
        of its own: it waits for the sub-agent's step in flight)."""
        why = self.stamper.say(tool_call_id, text)
        if why is not None:
            print(f"taskwire: a message for the sub-agent of {tool_call_id} was not delivered: {why}", file=sys.stderr)

    def close(self) -> None:
        """End this conversation here: no more reports, its run paused, and every process its
        tools started (OpenHands' terminal is a tmux server of its own session) ended by closing
        the conversation, whose tool executors close them. Runs on a thread of its own."""
        self.closed = True
        self.stamper.pause()
        self.confirm.refuse_all(closing=True)
        self.inbox.put(None)
        self._interrupt_tools()
        # close() first: it takes no state lock, and ending the tools ends the step in flight,
        # which pause() (it waits for the state lock) then follows.
        threading.Thread(target=_quietly(self.conversation.pause), name="taskwire-pause", daemon=True).start()
        _quietly(self.conversation.close)()


def _quietly(fn: Any) -> Any:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception:
            traceback.print_exc(file=sys.stderr)
            return None
    return wrapped


def _configure(conversation_id: str, config: dict[str, Any], previous: Session | None) -> None:
    """Build a conversation's session (on a thread: OpenHands' start-up takes a while) once its
    previous one, if any, has let go of OpenHands' persisted state."""
    try:
        if previous is not None:
            if previous.runner.is_alive():
                previous.runner.join(timeout=CLOSE_WAIT)
            if previous.runner.is_alive():
                raise RuntimeError(f"its previous run has not ended after {CLOSE_WAIT:g} s")
        session = Session(conversation_id, config)
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        OUT.put({"type": "fatal", "conversation": conversation_id, "code": "bad_agent",
                 "error": f"{type(exc).__name__}: {exc}"}, must=True)
        return
    SESSIONS[conversation_id] = session
    session.runner.start()
    OUT.put({"type": "ready", "conversation": conversation_id, "pid": os.getpid()}, must=True)


def _close(session: Session) -> None:
    session.close()
    session.runner.join(timeout=CLOSE_WAIT)
    if CLOSING.get(session.id) is session:
        del CLOSING[session.id]


def main() -> int:
    from importlib.metadata import version

    install(confirmation_handler=_confirm_subagent)
    OUT.put({"type": "started", "openhands_sdk": version("openhands-sdk"), "pid": os.getpid()}, must=True)
    closing: list[threading.Thread] = []
    for line in sys.stdin:
        try:
            command = json.loads(line)
        except ValueError:
            continue
        op, cid = command.get("op"), str(command.get("conversation") or "")
        session = SESSIONS.get(cid)
        if op == "configure":
            previous = SESSIONS.pop(cid, None) or CLOSING.get(cid)
            if previous is not None and not previous.closed:
                previous.close()
            threading.Thread(target=_configure, args=(cid, command.get("config") or {}, previous),
                             name="taskwire-configure", daemon=True).start()
        elif op == "shutdown":
            break
        elif session is None:
            continue
        elif op == "message":
            session.inbox.put(str(command.get("text", "")))
        elif op == "interrupt":
            session.interrupt()
        elif op == "answer":
            session.confirm.answer(int(command.get("request") or 0), bool(command.get("allow")))
        elif op == "steer":
            threading.Thread(target=session.steer, args=(str(command.get("tool_call_id")), str(command.get("text", ""))),
                             name="taskwire-steer", daemon=True).start()
        elif op == "stop_subagent":
            session.stamper.pause(str(command.get("tool_call_id")))
        elif op == "close":
            CLOSING[cid] = SESSIONS.pop(cid)
            closing.append(threading.Thread(target=_close, args=(session,), name="taskwire-close", daemon=True))
            closing[-1].start()
    # taskwire is gone or asked us to stop: end every conversation and what its tools started.
    ends = [threading.Thread(target=s.close, daemon=True) for s in list(SESSIONS.values()) if not s.closed]
    for thread in ends:
        thread.start()
    for thread in [*ends, *closing]:
        thread.join(timeout=10)
    OUT.close()
    return 0


if __name__ == "__main__":
    os._exit(main())
