"""The one OpenHands process of a server, shared by every ``kind: openhands`` conversation.

OpenHands' own agent-server runs all its conversations in one process; so does taskwire: the
runtime owns one ``OpenHandsProcess`` (started at the first OpenHands run, ended with the
server), which runs ``server/openhands/driver.py`` under ``OH_OPENHANDS_PYTHON``. Each
conversation's backend attaches to it (``attach``: configure its session, wait for ``ready``)
and receives its own reports (routed by ``conversation``); when the process exits, every
attached backend hears why (``gone``) and its next run starts a new process.

Nothing the process started outlives it: every process it starts carries a marker in its
environment (``TASKWIRE_OPENHANDS_PROCESS``), and what still carries it once the process is gone
(OpenHands' terminal is a tmux server in a session of its own, outside the process group) is
ended.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import signal
import uuid
from pathlib import Path
from typing import Any, Protocol

from ...child_processes import EXIT_GRACE, OWN_GROUP, end_group, exited_within
from ...errors import OpenHandsError
from ...openhands.protocol import ProtocolError, Report, command, parse_line

log = logging.getLogger(__name__)

DRIVER = Path(__file__).resolve().parents[2] / "openhands" / "driver.py"
MARKER = "TASKWIRE_OPENHANDS_PROCESS"
CLOSE_TIMEOUT = 15.0
"""Seconds the process has to close its conversations and exit when asked."""
STDERR_LINES = 40
LINE_LIMIT = 64 * 1024 * 1024


class Receiver(Protocol):
    """A conversation's backend, as the process sees it."""

    def receive(self, report: Report) -> None:
        """One report of this conversation, in order (must not block)."""

    def gone(self, failure: OpenHandsError) -> None:
        """The process exited: this conversation's session is gone with it."""


class OpenHandsProcess:
    """The OpenHands process of one server (``Runtime.openhands``)."""

    def __init__(self, python: str | None) -> None:
        self.python = python
        self.pid: int | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._readers: list[asyncio.Task[None]] = []
        self._started: asyncio.Future[None] | None = None
        self._lock = asyncio.Lock()
        self._receivers: dict[str, Receiver] = {}
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._marker = uuid.uuid4().hex
        self._ending = False
        self.dropped = 0
        """Reports the process dropped because taskwire read too slowly."""

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def attach(self, conversation_id: str, receiver: Receiver, config: dict[str, Any], timeout: float) -> None:
        """Start the process if it is not running, then (re)build this conversation's session
        in it; ``receiver`` hears its reports from now on (its ``ready`` or ``fatal`` first)."""
        await self._ensure(timeout)
        self._receivers[conversation_id] = receiver
        await self.send("configure", conversation=conversation_id, config=config)

    async def detach(self, conversation_id: str, receiver: Receiver) -> None:
        """Close this conversation in the process (its run, its tools' processes); no more of
        its reports."""
        if self._receivers.get(conversation_id) is receiver:
            del self._receivers[conversation_id]
            with contextlib.suppress(OpenHandsError):
                await self.send("close", conversation=conversation_id)

    async def send(self, op: str, **fields: Any) -> None:
        process = self._process
        if process is None or process.stdin is None or process.returncode is not None:
            raise OpenHandsError("the OpenHands process is not running", code="openhands_driver_exited")
        try:
            process.stdin.write(command(op, **fields))
            await process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise OpenHandsError("the OpenHands process went away", code="openhands_driver_exited") from exc

    # -- the process ----------------------------------------------------------------------

    async def _ensure(self, timeout: float) -> None:
        async with self._lock:
            if not self.running:
                await self._start()
            started = self._started
        assert started is not None
        done, _ = await asyncio.wait({started}, timeout=timeout)
        if not done:
            raise OpenHandsError(f"the OpenHands process did not start in {timeout:g} s", code="openhands_startup_timeout")
        started.result()

    async def _start(self) -> None:
        if not self.python:
            raise OpenHandsError("no OpenHands interpreter (run `make openhands`, or set OH_OPENHANDS_PYTHON)",
                                 code="openhands_unavailable")
        env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
        env[MARKER] = self._marker
        try:
            self._process = await asyncio.create_subprocess_exec(
                self.python, str(DRIVER), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, limit=LINE_LIMIT, env=env, **OWN_GROUP,
            )
        except OSError as exc:
            raise OpenHandsError(f"cannot start the OpenHands interpreter {self.python!r}: {exc}",
                                 code="openhands_unavailable") from exc
        self.pid = self._process.pid
        self._started = asyncio.get_running_loop().create_future()
        self._readers = [asyncio.create_task(self._read_stderr(self._process), name="openhands stderr"),
                         asyncio.create_task(self._pump(self._process), name="openhands pump")]

    async def _read_stderr(self, process: asyncio.subprocess.Process) -> None:
        assert process.stderr is not None
        async for line in process.stderr:
            text = line.decode(errors="replace").rstrip()
            self._stderr.append(text)
            log.debug("openhands process: %s", text)

    async def _pump(self, process: asyncio.subprocess.Process) -> None:
        """Every report of the process, to its conversation's receiver, until it exits."""
        assert process.stdout is not None
        failure: OpenHandsError | None = None
        try:
            async for line in process.stdout:
                report = parse_line(line)
                if report.type == "started":
                    if self._started is not None and not self._started.done():
                        self._started.set_result(None)
                    continue
                if report.type == "dropped":
                    self.dropped = max(self.dropped, int(report.data.get("count") or 0))
                    log.warning("openhands: the process dropped %d reports (taskwire read too slowly)", self.dropped)
                    continue
                receiver = self._receivers.get(str(report.data.get("conversation") or ""))
                if receiver is not None:
                    receiver.receive(report)
        except ProtocolError as exc:
            failure = OpenHandsError(f"the OpenHands process spoke out of protocol: {exc}", code="openhands_protocol")
        code = await process.wait()
        if failure is None:
            await asyncio.sleep(0)  # the last stderr lines
            tail = " | ".join(line for line in list(self._stderr)[-5:] if line.strip())
            failure = OpenHandsError(f"the OpenHands process exited (code {code})" + (f": {tail}" if tail else ""),
                                     code="openhands_driver_exited")
        if self._process is process:
            self._process = None
        if self._started is not None and not self._started.done():
            self._started.set_exception(failure)
        receivers, self._receivers = list(self._receivers.values()), {}
        if not self._ending:
            log.warning("openhands: %s", failure.detail)
        for receiver in receivers:
            receiver.gone(failure)
        await asyncio.to_thread(end_marked, self._marker)

    async def aclose(self) -> None:
        """End the process: every conversation closed (and what its tools started), then it
        exits; what outlives it is ended. Idempotent."""
        process, self._ending = self._process, True
        if process is not None and process.returncode is None:
            with contextlib.suppress(OpenHandsError):
                await self.send("shutdown")
            if not await exited_within(process, CLOSE_TIMEOUT):
                await end_group(process, grace=EXIT_GRACE)
        for task in self._readers:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(task), 5)
            task.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)
        self._readers = []
        await asyncio.to_thread(end_marked, self._marker)


def end_marked(marker: str) -> int:
    """Kill every process whose environment carries ``MARKER=marker`` (what OpenHands started
    and left behind); how many were found."""
    needle = f"{MARKER}={marker}".encode()
    found = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                os.kill(int(entry.name), signal.SIGKILL)
                found += 1
        except (OSError, ValueError):
            continue
    return found
