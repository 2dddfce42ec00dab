"""The ``openhands`` backend: OpenHands' own Agent and its ``task`` sub-agents, live.

One driver process per conversation (``server/openhands/driver.py`` under
``OH_OPENHANDS_PYTHON``, started at the first run, ended with the conversation). A pump task reads
every report of the driver for as long as it lives and hands each to the
``OpenHandsDispatcher`` (``server/openhands/dispatch.py``), which decides what it means; this
module only carries out its actions through hosts: the conversation's own for the main agent,
one child host per OpenHands sub-conversation (``host.start_subagent`` under the lane of the
``task`` call that spawned it), so stamping, storage and forwarding are every backend's.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import logging
import os
import signal
import uuid
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ...child_processes import EXIT_GRACE, OWN_GROUP, end_group, exited_within, signal_group
from ...errors import BackendError, OpenHandsError
from ...events import Usage
from ...openhands.dispatch import ROOT, Action, Confirm, Emit, FinishLane, Lane, OpenHandsDispatcher, RunEnded, StartLane
from ...openhands.protocol import ProtocolError, command, parse_line
from .base import AgentHost, run_user_turns
from ...settings import Settings
from ...specs import OpenHandsAgentSpec

log = logging.getLogger(__name__)

DRIVER = Path(__file__).resolve().parents[2] / "openhands" / "driver.py"
INTERRUPT_TIMEOUT = 10.0
"""Seconds an interrupted run waits for OpenHands to pause its sub-agents and itself."""
CLOSE_TIMEOUT = 5.0
STATE_DIR = ".taskwire/openhands"
"""OpenHands' own persisted conversation, under the workspace."""
STDERR_LINES = 40
LINE_LIMIT = 64 * 1024 * 1024


def driver_llm(spec: OpenHandsAgentSpec, settings: Settings) -> dict[str, Any]:
    """The LiteLLM settings for the driver: the spec's, else ``OH_LLM_*``, the model named with
    its provider (``openai/...``) as LiteLLM wants."""
    given = {k: v for k, v in (spec.llm.model_dump() if spec.llm else {}).items() if v is not None}
    llm = {**{k: v for k, v in settings.llm_defaults().items() if v is not None}, **given}
    api, model = llm.get("api"), str(llm.get("model") or "")
    if "/" not in model and api in ("openai", "anthropic", "scripted"):
        model = f"{'openai' if api == 'scripted' else api}/{model}"
    return {"model": model, "base_url": llm.get("base_url"), "api_key": llm.get("api_key")}


class OpenHandsBackend:
    """Drives one conversation's OpenHands driver. Implements ``AgentBackend``."""

    holds_session = True  # a peer process and its session: kept until the root is unloaded

    def __init__(self, spec: OpenHandsAgentSpec, python: str, config: dict[str, Any]) -> None:
        self.spec = spec
        self.python = python
        self.config = config
        self.dispatcher = OpenHandsDispatcher()
        self._hosts: dict[Lane, AgentHost] = {}
        self._lock = asyncio.Lock()
        self._process: asyncio.subprocess.Process | None = None
        self._pump: asyncio.Task[None] | None = None
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._stderr_task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[dict[str, Any]] | None = None
        self._run_end: asyncio.Future[RunEnded] | None = None
        self._failure: OpenHandsError | None = None
        self._root_usage = Usage()
        self._closed = False
        self._ending = False
        """The driver is being ended on purpose (its exit is no failure)."""
        self._asking: set[asyncio.Task[None]] = set()
        """Confirmations waiting for a person."""

    @classmethod
    def from_spec(cls, agent: dict[str, Any], host: AgentHost) -> OpenHandsBackend:
        try:
            spec = OpenHandsAgentSpec.model_validate(agent)
        except ValidationError as exc:
            raise BackendError(f"invalid openhands agent: {exc}", code="bad_agent") from exc
        python = host.settings.openhands_python
        if not python:
            raise OpenHandsError("OH_OPENHANDS_PYTHON is not set (see docs/openhands.md)", code="openhands_unavailable")
        config = {
            "llm": driver_llm(spec, host.settings), "tools": spec.tools, "subagent_types": spec.subagent_types,
            "tool_concurrency_limit": spec.tool_concurrency_limit, "max_iterations": spec.max_iterations,
            "confirmation": spec.confirmation,
            "workspace": str(host.workspace),
            # OpenHands keeps its own conversation there, so a new driver (after a restart, or an
            # interrupt OpenHands could not honour in time) goes on with the same history.
            "conversation_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"taskwire:{host.conversation_id}")),
            "persistence_dir": str(Path(host.workspace) / STATE_DIR),
        }
        return cls(spec, python, config)

    # -- running --------------------------------------------------------------------------

    async def run(self, host: AgentHost) -> str | None:
        self._hosts[ROOT] = host
        await self._start()
        return await run_user_turns(host, self.run_turn)

    async def run_turn(self, text: str) -> str | None:
        """Send one user message; the answer once OpenHands' run on it returns."""
        if self._failure is not None:
            raise self._failure
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
            # OpenHands pauses between steps only (an LLM request in flight is waited for): end
            # the driver; the next message starts a new one on OpenHands' persisted history.
            await self._end_driver(kill=True)
        async with self._lock:
            await self._apply(self.dispatcher.close("the run was interrupted"))

    async def _stop_subagent(self, lane: str) -> None:
        """Pause one sub-conversation: it ends ``cancelled``, the parent reads that and goes on."""
        await self._send("stop_subagent", tool_call_id=lane)

    async def _send(self, op: str, **fields: Any) -> None:
        process = self._process
        if process is None or process.stdin is None or process.returncode is not None:
            raise self._failure or OpenHandsError("the OpenHands driver is not running", code="openhands_driver_exited")
        try:
            process.stdin.write(command(op, **fields))
            await process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise OpenHandsError("the OpenHands driver went away", code="openhands_driver_exited") from exc

    # -- the driver and its pump ----------------------------------------------------------

    async def _start(self) -> None:
        if self._process is not None:
            return
        try:
            self._process = await asyncio.create_subprocess_exec(
                self.python, str(DRIVER), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd=self.config["workspace"], limit=LINE_LIMIT,
                env={k: v for k, v in os.environ.items() if not k.startswith("OH_")}, **OWN_GROUP,
            )
        except OSError as exc:
            raise OpenHandsError(f"cannot start OH_OPENHANDS_PYTHON {self.python!r}: {exc}",
                                 code="openhands_unavailable") from exc
        self._ready = asyncio.get_running_loop().create_future()
        self._stderr_task = asyncio.create_task(self._read_stderr(), name="openhands stderr")
        self._pump = asyncio.create_task(self._pump_reports(), name="openhands pump")
        await self._send("configure", config=self.config)
        done, _ = await asyncio.wait({self._ready}, timeout=self.spec.startup_timeout)
        if not done:
            raise OpenHandsError(f"the OpenHands driver did not start in {self.spec.startup_timeout:g} s",
                                 code="openhands_startup_timeout")
        self._ready.result()

    async def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        async for line in self._process.stderr:
            text = line.decode(errors="replace").rstrip()
            self._stderr.append(text)
            log.debug("openhands driver: %s", text)

    async def _pump_reports(self) -> None:
        """Every report of the driver, through the dispatcher, until it exits."""
        assert self._process is not None and self._process.stdout is not None
        failure: OpenHandsError | None = None
        try:
            async for line in self._process.stdout:
                report = parse_line(line)
                if report.type == "ready":
                    self._resolve(self._ready, report.data)
                    continue
                if report.type == "fatal":
                    failure = OpenHandsError(str(report.data.get("error")), code=str(report.data.get("code") or "bad_agent"))
                    break
                async with self._lock:
                    await self._apply(self.dispatcher.feed(report))
        except ProtocolError as exc:
            failure = OpenHandsError(f"the OpenHands driver spoke out of protocol: {exc}", code="openhands_protocol")
        code = await self._process.wait()
        if self._closed or self._ending:
            return
        if failure is None:
            if self._stderr_task is not None:
                await asyncio.wait({self._stderr_task}, timeout=1)
            tail = " | ".join(line for line in list(self._stderr)[-5:] if line.strip())
            failure = OpenHandsError(f"the OpenHands driver exited (code {code})" + (f": {tail}" if tail else ""),
                                     code="openhands_driver_exited")
        self._failure = failure
        for future in (self._ready, self._run_end):
            if future is not None and not future.done():
                future.set_exception(failure)
        async with self._lock:
            await self._apply(self.dispatcher.close(failure.detail, status="error"))

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
            elif isinstance(action, FinishLane):
                child = self._hosts.pop(action.lane, None)
                parent = self._hosts.get(action.parent) or self._hosts[ROOT]
                if child is not None:
                    if action.usage is not None and action.usage.llm_calls:
                        await child.add_usage(action.usage)
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
            elif isinstance(action, RunEnded):
                await self._count_root_usage(action.usage)
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

    async def _count_root_usage(self, total: Usage | None) -> None:
        # The driver reports the main agent's totals; the conversation's stats take the increase.
        if total is None or total.llm_calls <= self._root_usage.llm_calls:
            return
        added = Usage(**{k: getattr(total, k) - getattr(self._root_usage, k) for k in Usage.model_fields})
        self._root_usage = total
        await self._hosts[ROOT].add_usage(added)

    # -- the end --------------------------------------------------------------------------

    async def _stop_asking(self) -> None:
        for task in list(self._asking):
            task.cancel()
        await asyncio.gather(*self._asking, return_exceptions=True)

    async def _end_driver(self, *, kill: bool = False) -> None:
        """Stop the driver (asked to shut down, or killed) and its readers; a later run starts
        a new one."""
        process, self._ending = self._process, True
        if process is not None and process.returncode is None:
            if not kill:
                with contextlib.suppress(OpenHandsError, OSError):
                    await self._send("shutdown")
            if kill or not await exited_within(process, CLOSE_TIMEOUT):
                # Its group too: the shells and tools OpenHands started under it.
                if kill:
                    signal_group(process, signal.SIGKILL)
                await end_group(process, grace=0 if kill else EXIT_GRACE)
        for task in (self._pump, self._stderr_task):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self._process = self._pump = self._stderr_task = None
        self._ending = False

    async def close(self) -> None:
        """End the driver, close what is still open. Idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._stop_asking()
        await self._end_driver()
        if ROOT not in self._hosts:
            return
        try:
            async with self._lock:
                await self._apply(self.dispatcher.close("OpenHands was stopped with its conversation"))
        except Exception:  # closing must not fail; the store may be going away too
            log.exception("openhands: could not close the open sub-agents and calls")
