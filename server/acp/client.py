"""The ACP agent subprocess and the ``agent-client-protocol`` connection to it.

``ACPSession.start`` spawns the agent in its own process group, connects with
``acp.connect_to_agent``, and runs ``initialize``, ``session/new`` and ``session/set_mode``
within the start-up timeout. Everything the agent sends is read off the connection's raw
message observer into one queue, in wire order: the package handles each notification in a
task of its own (no order), validates them against its models (an update it does not know is
dropped, a status it does not know becomes ``None``), so the bridge reads the raw messages
instead. The package still does the JSON-RPC: requests, responses, permission answers.

``close`` ends the connection and the whole process group: the agent never outlives it.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, connect_to_agent, text_block
from acp.connection import StreamDirection, StreamEvent
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation, InitializeResponse
from pydantic import ValidationError

from .. import __version__
from .answers import PermissionClient, PermissionPolicy
from .child_sessions import RFD_UPDATES
from .incoming import Incoming
from ..child_processes import EXIT_GRACE, OWN_GROUP, end_group, exited_within
from ..errors import ACPError

log = logging.getLogger(__name__)

STREAM_LIMIT = 50 * 1024 * 1024
"""Longest line the agent may send (a large file read arrives as one JSON-RPC message)."""

class ACPSession:
    """One ACP agent subprocess holding one session."""

    def __init__(
        self, process: asyncio.subprocess.Process, label: str, *, permissions: PermissionPolicy, subagent_sessions: bool = False
    ) -> None:
        self.process = process
        self.label = label
        self.session_id = ""
        self.queue: asyncio.Queue[Incoming] = asyncio.Queue()
        self.last_prompt_result: dict[str, Any] | None = None
        """The raw result of the last ``session/prompt`` (read raw: the package's model rejects
        a stop reason it does not know)."""
        self._stderr: collections.deque[str] = collections.deque(maxlen=40)
        self._closed = False
        self._ask = permissions == "ask"
        self._asked: dict[str, collections.deque[asyncio.Future[str | None]]] = collections.defaultdict(collections.deque)
        """Permission requests a person answers (``ask``), by ``toolCallId``, in wire order."""
        self._tasks = [
            asyncio.create_task(self._read_stderr(), name=f"acp stderr {label}"),
            asyncio.create_task(self._watch_exit(), name=f"acp exit {label}"),
        ]
        self.connection = connect_to_agent(
            PermissionClient(permissions, self._asked), process.stdin, process.stdout, observers=[self._observe]
        )
        self.subagent_sessions = subagent_sessions
        self.loaded = False
        """The session is an earlier one, reopened with ``session/load`` (its replay is queued)."""
        if subagent_sessions:
            _skip_rfd_updates(self.connection)

    # -- start ------------------------------------------------------------------------------

    @classmethod
    async def start(
        cls,
        *,
        command: str,
        args: list[str],
        env: dict[str, str],
        cwd: Path,
        session_mode: str | None,
        permissions: PermissionPolicy,
        startup_timeout: float,
        session_meta: dict[str, Any] | None = None,
        subagent_sessions: bool = False,
        load_session_id: str | None = None,
    ) -> ACPSession:
        """Spawn the agent and open a session. Raises ``ACPError`` (the process is gone by then)
        if it cannot be started, exits, refuses, or does not answer within ``startup_timeout``."""
        label = " ".join([command, *args])
        if not cwd.is_dir():
            raise ACPError(f"cannot start ACP agent {label!r}: working directory {cwd} does not exist", code="acp_start_failed")
        try:
            process = await asyncio.create_subprocess_exec(
                command, *args,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                env=env, cwd=str(cwd), limit=STREAM_LIMIT,
                **OWN_GROUP,  # a group signal reaches the server only; close() ends its children too
            )
        except FileNotFoundError as exc:
            raise ACPError(f"cannot start ACP agent: command {command!r} not found", code="acp_not_found") from exc
        except OSError as exc:
            raise ACPError(f"cannot start ACP agent {label!r}: {exc.strerror or exc}", code="acp_start_failed") from exc
        session = cls(process, label, permissions=permissions, subagent_sessions=subagent_sessions)
        step = "initialize"
        try:
            async with asyncio.timeout(startup_timeout):
                can_load = await session._initialize()
                if load_session_id is not None and can_load:
                    step = "session/load"
                    created = await session._load(cwd, load_session_id, session_meta)
                else:
                    created = None
                if created is None:
                    step = "session/new"
                    created = await session.connection.new_session(cwd=str(cwd), mcp_servers=[], **(session_meta or {}))
                    session.session_id = created.session_id
                step = "session/set_mode"
                await session._set_mode(created.modes, session_mode)
        except (ACPError, asyncio.CancelledError):
            await session.close()
            raise
        except Exception as exc:
            await session.close()
            raise session._start_error(exc, step, startup_timeout) from exc
        return session

    async def _load(self, cwd: Path, session_id: str, session_meta: dict[str, Any] | None) -> Any:
        """``session/load`` of an earlier session; ``None`` if the agent refuses (it no longer
        has it): a new one is opened instead. What it replays is in the queue when this returns."""
        try:
            loaded = await self.connection.load_session(cwd=str(cwd), session_id=session_id, mcp_servers=[], **(session_meta or {}))
        except RequestError as exc:
            log.warning("ACP agent could not load session %s (%s); opening a new one", session_id, _request_error_text(exc))
            return None
        self.session_id = session_id
        self.loaded = True
        return loaded

    async def _initialize(self) -> bool:
        """``initialize``; whether the agent can ``session/load``."""
        capabilities = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=False, write_text_file=False), terminal=False)
        info = Implementation(name="taskwire", version=__version__)
        if not self.subagent_sessions:
            response = await self.connection.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities, client_info=info)
            return bool(response.agent_capabilities and response.agent_capabilities.load_session)
        # The package's ClientCapabilities has no ``subagents`` (it would be dropped): sent raw.
        # Never a ``_meta.jetbrains.air``: claude-agent-acp would switch to JetBrains' draft.
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": {**capabilities.model_dump(by_alias=True, exclude_none=True), "subagents": {}},
            "clientInfo": info.model_dump(by_alias=True, exclude_none=True),
        }
        response = InitializeResponse.model_validate(await self.connection._conn.send_request("initialize", params))
        return bool(response.agent_capabilities and response.agent_capabilities.load_session)

    async def cancel_child(self, child_session_id: str) -> None:
        """Send ``session/cancel`` naming a child session: the agent stops that child alone."""
        with contextlib.suppress(ConnectionError, OSError):
            await self.connection.cancel(session_id=child_session_id)

    async def _set_mode(self, modes: Any, wanted: str | None) -> None:
        if wanted is None or modes is None:
            return  # nothing asked, or the agent has no modes
        available = [mode.id for mode in modes.available_modes]
        if wanted not in available:
            raise ACPError(
                f"ACP agent has no session mode {wanted!r}; it offers {', '.join(available) or 'none'}",
                code="acp_bad_mode",
            )
        if modes.current_mode_id != wanted:
            await self.connection.set_session_mode(session_id=self.session_id, mode_id=wanted)

    def _start_error(self, exc: Exception, step: str, timeout: float) -> ACPError:
        if isinstance(exc, TimeoutError):
            return ACPError(
                f"ACP agent {self.label!r} did not answer {step} within {timeout:g} s{self.stderr_note()}",
                code="acp_startup_timeout",
            )
        if isinstance(exc, RequestError):
            return ACPError(f"ACP agent refused {step}: {_request_error_text(exc)}{self.stderr_note()}", code="acp_start_failed")
        if isinstance(exc, ConnectionError):
            return ACPError(f"ACP agent {self.label!r} exited during {step}: {self.exit_detail()}", code="acp_start_failed")
        return ACPError(f"ACP agent {self.label!r} failed during {step}: {exc!r}{self.stderr_note()}", code="acp_start_failed")

    # -- prompting --------------------------------------------------------------------------

    def prompt(self, text: str) -> asyncio.Task[Any]:
        """Send ``session/prompt``; the returned task's end is queued as ``prompt_done`` after
        every message the agent sent before its answer."""
        self.last_prompt_result = None
        task = asyncio.create_task(
            self.connection.prompt(session_id=self.session_id, prompt=[text_block(text)]),
            name=f"acp prompt {self.label}",
        )
        task.add_done_callback(self._prompt_done)
        return task

    def _prompt_done(self, task: asyncio.Task[Any]) -> None:
        if not task.cancelled():
            task.exception()  # retrieved here; ``prompt_error`` reads it when the turn ends
        self.queue.put_nowait(Incoming("prompt_done", task))

    async def cancel(self) -> None:
        """Send ``session/cancel`` (a notification: the agent answers the prompt ``cancelled``)."""
        with contextlib.suppress(ConnectionError, OSError):
            await self.connection.cancel(session_id=self.session_id)

    def drain(self) -> list[Incoming]:
        """Everything queued now, without waiting."""
        items = []
        while not self.queue.empty():
            items.append(self.queue.get_nowait())
        return items

    async def prompt_error(self, task: asyncio.Task[Any]) -> ACPError | None:
        """What a finished prompt task's failure means for the turn (``None``: it answered)."""
        if task.cancelled():
            return ACPError("the prompt was abandoned before the agent answered", code="acp_prompt_failed")
        exc = task.exception()
        if exc is None or (isinstance(exc, ValidationError) and self.last_prompt_result is not None):
            return None  # a raw answer the package's model did not accept is still an answer
        if isinstance(exc, ConnectionError):
            await exited_within(self.process, EXIT_GRACE)  # its output ended first; its exit code follows
            return ACPError(f"ACP agent {self.label!r} exited during the turn: {self.exit_detail()}", code="acp_crashed")
        if isinstance(exc, RequestError):
            return ACPError(f"ACP agent failed the prompt: {_request_error_text(exc)}{self.stderr_note()}", code="acp_prompt_failed")
        return ACPError(f"ACP agent's answer could not be read: {exc!r}", code="acp_prompt_failed")

    # -- state ------------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return not self._closed and self.process.returncode is None

    def exit_detail(self) -> str:
        code = self.process.returncode
        said = "still running, connection closed" if code is None else f"exit code {code}"
        return f"{said}{self.stderr_note()}"

    def stderr_note(self) -> str:
        tail = "\n".join(self._stderr).strip()
        return f"; its stderr ends:\n{tail[-2000:]}" if tail else ""

    # -- raw messages -----------------------------------------------------------------------

    def _observe(self, event: StreamEvent) -> None:
        # Called synchronously by the receive loop for every message, in wire order, before the
        # package dispatches it: the queue is the one ordered record of the session.
        if event.direction is not StreamDirection.INCOMING:
            return
        message = event.message
        method = message.get("method")
        if method == "session/update" and isinstance(message.get("params"), dict):
            self.queue.put_nowait(Incoming("update", message["params"]))
        elif method == "session/request_permission" and isinstance(message.get("params"), dict):
            params = message["params"]
            answer = None
            if self._ask:
                answer = asyncio.get_running_loop().create_future()
                tool_call = params.get("toolCall")
                call_id = tool_call.get("toolCallId") if isinstance(tool_call, dict) else None
                self._asked[call_id if isinstance(call_id, str) else ""].append(answer)
            self.queue.put_nowait(Incoming("permission", params, answer))
        elif method is None and isinstance(message.get("result"), dict) and "stopReason" in message["result"]:
            self.last_prompt_result = message["result"]

    async def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        while line := await self.process.stderr.readline():
            text = line.decode("utf-8", errors="replace").rstrip()
            self._stderr.append(text)
            log.debug("[%s] %s", self.label, text)

    async def _watch_exit(self) -> None:
        code = await self.process.wait()
        self.queue.put_nowait(Incoming("exited", code))

    # -- end --------------------------------------------------------------------------------

    async def close(self) -> None:
        """End the session: stdin closed, then the process group signalled until it is gone.
        Idempotent; never waits more than a few seconds."""
        if self._closed:
            return
        self._closed = True
        await end_group(self.process)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.connection.close(), EXIT_GRACE)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for waiting in self._asked.values():
            for answer in waiting:
                if not answer.done():
                    answer.set_result(None)
        self._asked.clear()

def _skip_rfd_updates(connection: Any) -> None:
    """Have the package skip the subagents RFD's updates (``subagent_update``, ...): its models
    reject them and it would log an error per frame. The observer reads them raw all the same."""
    inner = connection._conn
    handler = inner._handler

    async def handle(method: str, params: Any, is_notification: bool) -> Any:
        if method == "session/update" and isinstance(params, dict):
            update = params.get("update")
            if isinstance(update, dict) and update.get("sessionUpdate") in RFD_UPDATES:
                return None
        return await handler(method, params, is_notification)

    inner._handler = handle


def _request_error_text(exc: RequestError) -> str:
    data = getattr(exc, "data", None)
    return f"{exc}" + (f" ({data})" if data else "")
