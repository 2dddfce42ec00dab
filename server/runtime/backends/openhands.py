"""The ``openhands`` backend: OpenHands' own Agent and its ``task`` sub-agents, live.

One OpenHands process serves every conversation of the server (``openhands_process.py``); this
conversation's session in it is built at its first run and closed with it. Its reports arrive
in order on a queue, and a task of this backend hands each to the ``OpenHandsDispatcher``
(``server/openhands/dispatch.py``), which decides what it means; this module only carries out
its actions through hosts: the conversation's own for the main agent,
one child host per OpenHands sub-conversation (``host.start_subagent`` under the lane of the
``task`` call that spawned it), so stamping, storage and forwarding are every backend's.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import uuid
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ...errors import BackendError, OpenHandsError
from ...events import LLMCall
from ...openhands.dispatch import (
    ROOT, Action, AddUsage, Confirm, Emit, FinishLane, Lane, OpenHandsDispatcher, RunEnded, StartLane)
from ...openhands.protocol import Report
from .openhands_process import OpenHandsProcess
from .base import AgentHost, run_user_turns
from ...settings import Settings
from ...specs import OpenHandsAgentSpec

log = logging.getLogger(__name__)

CLOSE_TIMEOUT = 5.0
"""Seconds a closing conversation gives its last reports to be applied."""
INTERRUPT_TIMEOUT = 10.0
"""Seconds an interrupted run waits for OpenHands to pause its sub-agents and itself."""
STATE_DIR = ".taskwire/openhands"
"""OpenHands' own persisted conversation, under the workspace."""


def driver_llm(spec: OpenHandsAgentSpec, settings: Settings) -> dict[str, Any]:
    """The LiteLLM settings for the driver: the spec's, else ``OH_LLM_*``, the model named with
    its provider (``openai/...``) as LiteLLM wants."""
    given = {k: v for k, v in (spec.llm.model_dump() if spec.llm else {}).items() if v is not None}
    llm = {**{k: v for k, v in settings.llm_defaults().items() if v is not None}, **given}
    api, model = llm.get("api"), str(llm.get("model") or "")
    if "/" not in model and api in ("openai", "anthropic", "scripted"):
        model = f"{'openai' if api == 'scripted' else api}/{model}"
    # OpenHands retries through LiteLLM: as many times as taskwire's own clients would, each
    # attempt bounded like a stalled stream, so a reset or a 429 does not end the tree.
    return {"model": model, "base_url": llm.get("base_url"), "api_key": llm.get("api_key"),
            "num_retries": int(llm.get("max_retries") or 0), "timeout": int(llm.get("stall_timeout") or 90)}


class OpenHandsBackend:
    """Drives one conversation's session in the server's OpenHands process. Implements
    ``AgentBackend``."""

    holds_session = True  # a session in the OpenHands process: kept until the root is unloaded

    def __init__(self, spec: OpenHandsAgentSpec, process: OpenHandsProcess, conversation_id: str,
                 config: dict[str, Any]) -> None:
        self.spec = spec
        self.process = process
        self.conversation_id = conversation_id
        self.config = config
        self.dispatcher = OpenHandsDispatcher()
        self._hosts: dict[Lane, AgentHost] = {}
        self._lock = asyncio.Lock()
        self._reports: asyncio.Queue[Report | OpenHandsError | None] = asyncio.Queue()
        self._consumer: asyncio.Task[None] | None = None
        self._attached = False
        self._ready: asyncio.Future[None] | None = None
        self._run_end: asyncio.Future[RunEnded] | None = None
        self._failure: OpenHandsError | None = None
        self._closed = False
        self._asking: set[asyncio.Task[None]] = set()
        """Confirmations waiting for a person."""

    @classmethod
    def from_spec(cls, agent: dict[str, Any], host: AgentHost, process: OpenHandsProcess | None) -> OpenHandsBackend:
        try:
            spec = OpenHandsAgentSpec.model_validate(agent)
        except ValidationError as exc:
            raise BackendError(f"invalid openhands agent: {exc}", code="bad_agent") from exc
        if process is None or not process.python:
            raise OpenHandsError("no OpenHands interpreter: run `make openhands`, or set OH_OPENHANDS_PYTHON "
                                 "(see docs/openhands.md)", code="openhands_unavailable")
        config = {
            "llm": driver_llm(spec, host.settings), "tools": spec.tools, "subagent_types": spec.subagent_types,
            "tool_concurrency_limit": spec.tool_concurrency_limit, "max_iterations": spec.max_iterations,
            "confirmation": spec.confirmation,
            "workspace": str(host.workspace),
            # OpenHands keeps its own conversation there, so a new session (after a restart, or an
            # interrupt OpenHands could not honour in time) goes on with the same history.
            "conversation_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"taskwire:{host.conversation_id}")),
            "persistence_dir": str(Path(host.workspace) / STATE_DIR),
        }
        return cls(spec, process, host.conversation_id, config)

    # -- running --------------------------------------------------------------------------

    async def run(self, host: AgentHost) -> str | None:
        self._hosts[ROOT] = host
        return await run_user_turns(host, self.run_turn)

    async def run_turn(self, text: str) -> str | None:
        """Send one user message; the answer once OpenHands' run on it returns."""
        await self._attach()
        self.dispatcher.answer = None
        self._run_end = asyncio.get_running_loop().create_future()
        try:
            await self._send("message", text=text)
            end = await asyncio.shield(self._run_end)
        except asyncio.CancelledError:
            await self._interrupt()
            raise
        finally:
            self._run_end = None
        if end.status == "finished":
            return end.answer
        if end.status == "paused":
            return None
        raise OpenHandsError(end.error or f"OpenHands stopped with status {end.status}", code=f"openhands_{end.status}")

    async def _interrupt(self) -> None:
        """Pause the sub-agents, then the main agent; what is still open then is closed."""
        run_end = self._run_end
        await self._stop_asking()
        with contextlib.suppress(OpenHandsError, OSError):
            await self._send("interrupt")
            if run_end is not None:
                await asyncio.wait({run_end}, timeout=INTERRUPT_TIMEOUT)
        if run_end is not None and not run_end.done():
            # OpenHands pauses between steps only (an LLM request or a command in flight is
            # waited for): this conversation's session is closed, which ends what its tools
            # run; the next message builds a new one on OpenHands' persisted history.
            await self._detach()
        async with self._lock:
            await self._apply(self.dispatcher.close("the run was interrupted"))

    async def _stop_subagent(self, lane: str) -> None:
        """Pause one sub-conversation: it ends ``cancelled``, the parent reads that and goes on."""
        await self._send("stop_subagent", tool_call_id=lane)

    async def _steer_subagent(self, lane: str, text: str) -> None:
        """A person's message to one sub-conversation: OpenHands adds it to its history once
        its step in flight ends, and its next model call reads it."""
        if not self.dispatcher.lane_open(lane):
            raise OpenHandsError("the sub-agent has ended", code="subagent_not_running")
        await self._send("steer", tool_call_id=lane, text=text)

    async def _send(self, op: str, **fields: Any) -> None:
        if self._failure is not None:
            raise self._failure
        if not self._attached:
            raise OpenHandsError("this conversation has no session in the OpenHands process", code="openhands_driver_exited")
        await self.process.send(op, conversation=self.conversation_id, **fields)

    # -- the session and its reports ------------------------------------------------------

    async def _attach(self) -> None:
        """This conversation's session in the process (a new process if it is not running)."""
        if self._attached:
            return
        self._failure = None
        if self._consumer is None:
            self._consumer = asyncio.create_task(self._consume(), name="openhands reports")
        self._ready = asyncio.get_running_loop().create_future()
        await self.process.attach(self.conversation_id, self, self.config, self.spec.startup_timeout)
        self._attached = True
        done, _ = await asyncio.wait({self._ready}, timeout=self.spec.startup_timeout)
        if not done:
            await self._detach()
            raise OpenHandsError(f"OpenHands did not build the conversation in {self.spec.startup_timeout:g} s",
                                 code="openhands_startup_timeout")
        try:
            self._ready.result()
        except OpenHandsError:
            await self._detach()
            raise

    async def _detach(self) -> None:
        if self._attached:
            self._attached = False
            await self.process.detach(self.conversation_id, self)

    def receive(self, report: Report) -> None:
        if report.type == "ready":
            self._resolve(self._ready, None)
        elif report.type == "fatal":
            failure = OpenHandsError(str(report.data.get("error")), code=str(report.data.get("code") or "bad_agent"))
            if self._ready is not None and not self._ready.done():
                self._ready.set_exception(failure)
        else:
            self._reports.put_nowait(report)

    def gone(self, failure: OpenHandsError) -> None:
        self._attached = False
        self._failure = failure
        for future in (self._ready, self._run_end):
            if future is not None and not future.done():
                future.set_exception(failure)
        self._reports.put_nowait(failure)

    async def _consume(self) -> None:
        """This conversation's reports, through the dispatcher, in order."""
        while (report := await self._reports.get()) is not None:
            try:
                async with self._lock:
                    if isinstance(report, OpenHandsError):
                        await self._apply(self.dispatcher.close(report.detail, status="error"))
                    else:
                        await self._apply(self.dispatcher.feed(report))
            except Exception:  # one bad report must not silence the rest
                log.exception("openhands: a report could not be applied")

    @staticmethod
    def _resolve(future: asyncio.Future[Any] | None, value: Any) -> None:
        if future is not None and not future.done():
            future.set_result(value)

    async def _apply(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, StartLane):
                parent = self._hosts.get(action.parent) or self._hosts[ROOT]
                child = self._hosts[action.lane] = await parent.start_subagent(
                    action.lane, subagent_type=action.subagent_type, description=action.description,
                    agent={"kind": "openhands", "subagent_type": action.subagent_type},
                )
                child.stop_hook = functools.partial(self._stop_subagent, action.lane)
                child.steer_hook = functools.partial(self._steer_subagent, action.lane)
            elif isinstance(action, FinishLane):
                child = self._hosts.pop(action.lane, None)
                parent = self._hosts.get(action.parent) or self._hosts[ROOT]
                if child is not None:
                    # Its usage came call by call (``AddUsage``); an older driver's totals are not added again.
                    await parent.finish_subagent(child, status=action.status, result=action.result)
            elif isinstance(action, Emit):
                host = self._hosts.get(action.lane)
                if host is None:
                    log.warning("openhands: dropped %s for lane %s that is not open", action.event.kind, action.lane)
                    continue
                await host.emit(action.event, wait=False)
            elif isinstance(action, Confirm):
                task = asyncio.create_task(self._confirm(action), name="openhands confirmation")
                self._asking.add(task)
                task.add_done_callback(self._asking.discard)
            elif isinstance(action, AddUsage):
                host = self._hosts.get(action.lane)
                if host is not None:
                    provider, _, model = action.model.rpartition("/")
                    await host.add_usage(action.usage, LLMCall(model=model or action.model, provider=provider or None))
            elif isinstance(action, RunEnded):
                self._resolve(self._run_end, action)

    async def _confirm(self, action: Confirm) -> None:
        """Ask a person about each action OpenHands waits on, in the agent that asks; the
        driver hears allowed only if every one was."""
        host = self._hosts.get(action.lane) or self._hosts[ROOT]
        allowed = True
        try:
            for call in action.actions:
                if allowed:
                    resolution = await host.request_permission(
                        tool_call_id=str(call.get("tool_call_id")), tool_name=str(call.get("tool_name")),
                        arguments=call.get("arguments") or {},
                    )
                    allowed = resolution.allowed
        except asyncio.CancelledError:
            allowed = False
            raise
        finally:
            with contextlib.suppress(OpenHandsError, OSError):
                await self._send("answer", request=action.request, allow=allowed)

    # -- the end --------------------------------------------------------------------------

    async def _stop_asking(self) -> None:
        for task in list(self._asking):
            task.cancel()
        await asyncio.gather(*self._asking, return_exceptions=True)

    async def close(self) -> None:
        """Close this conversation's session (and what its tools started), close what is still
        open. Idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._stop_asking()
        await self._detach()
        if self._consumer is not None:
            # What the session reported before it closed is applied first.
            self._reports.put_nowait(None)
            await asyncio.wait({self._consumer}, timeout=CLOSE_TIMEOUT)
            self._consumer.cancel()
            await asyncio.gather(self._consumer, return_exceptions=True)
        if ROOT not in self._hosts:
            return
        try:
            async with self._lock:
                await self._apply(self.dispatcher.close("OpenHands was stopped with its conversation"))
        except Exception:  # closing must not fail; the store may be going away too
            log.exception("openhands: could not close the open sub-agents and calls")
