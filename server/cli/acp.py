"""``taskwire acp``: serve taskwire to an editor over the Agent Client Protocol, on stdio.

Embedded (default): this process hosts a runtime on the default store (SQLite under
``OH_WORKSPACE_PATH``, or ``OH_DATABASE_URL``), with every ``OH_*`` setting. Attached
(``--url``): it drives a running server over REST and its event socket.

stdout carries the protocol and nothing else: the process keeps its own copy of the original
stdout for it and points file descriptor 1 at stderr, so a stray print (a library's, a tool's
child process) cannot corrupt the stream. Logs go to stderr, or to ``--log-file``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any, AsyncIterator

from ..acp_agent.base import Conversations

log = logging.getLogger(__name__)

STREAM_LIMIT = 50 * 1024 * 1024
"""Longest JSON-RPC line accepted from the client (a prompt with a large embedded file)."""


def add_commands(commands: argparse._SubParsersAction) -> None:
    acp = commands.add_parser(
        "acp", help="serve taskwire to an editor over the Agent Client Protocol (stdio; see docs/acp-agent.md)"
    )
    acp.add_argument("--url", help="drive the taskwire server at this URL instead of hosting a runtime in this process")
    acp.add_argument("--key", "--api-key", dest="key", help="the server's session API key (with --url)")
    acp.add_argument("--agent", help="the agent of new sessions, a JSON agent spec as POST /api/conversations takes it")
    acp.add_argument("--context-window", type=int, help="the model's context window in tokens: enables usage_update")
    acp.add_argument("--log-file", help="append logs here instead of stderr")
    acp.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    acp.set_defaults(handler=run_acp)


def run_acp(args: argparse.Namespace) -> int:
    protocol_out = claim_stdout()
    _configure_logging(args.log_file, args.log_level)
    try:
        default_agent = json.loads(args.agent) if args.agent else None
        if default_agent is not None and not isinstance(default_agent, dict):
            raise ValueError("not a JSON object")
    except ValueError as exc:
        log.error("--agent must be a JSON agent spec object: %s", exc)
        return 2
    try:
        return asyncio.run(serve_acp(args, default_agent, protocol_out))
    except KeyboardInterrupt:
        return 130


def claim_stdout() -> int:
    """A private copy of stdout for the protocol; file descriptor 1 then points at stderr."""
    sys.stdout.flush()
    protocol_out = os.dup(1)
    os.dup2(2, 1)
    return protocol_out


async def serve_acp(args: argparse.Namespace, default_agent: dict[str, Any] | None, protocol_out: int) -> int:
    """Serve one client on stdin / ``protocol_out`` until it hangs up or a signal stops us."""
    from acp import run_agent

    from ..acp_agent.agent import TaskwireAgent

    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)  # type: ignore[union-attr]
    try:
        async with conversations_for(args) as conversations:
            reader, writer = await protocol_streams(protocol_out)
            agent = TaskwireAgent(conversations, default_agent=default_agent, context_window=args.context_window)
            try:
                await run_agent(agent, writer, reader, observers=[agent.observe])
            finally:
                await agent.close()
    except StartupError as exc:
        log.error("%s", exc)
        return 2
    except asyncio.CancelledError:
        log.info("stopped by a signal")
    return 0


class StartupError(Exception):
    """What keeps ``taskwire acp`` from starting, in one readable line."""


@contextlib.asynccontextmanager
async def conversations_for(args: argparse.Namespace) -> AsyncIterator[Conversations]:
    """The attached server, or a runtime hosted here."""
    from ..errors import TaskwireError

    if args.url:
        from ..acp_agent.attached import AttachedConversations

        attached = AttachedConversations(args.url, args.key)
        try:
            try:
                await attached.open()
            except TaskwireError as exc:
                raise StartupError(f"cannot use the taskwire server at {args.url}: {exc.detail}") from exc
            log.info("attached to %s (forwarding of sub-agent events: %s)", args.url, "on" if attached.forwarding else "off")
            yield attached
        finally:
            await attached.close()
        return

    from ..acp_agent.embedded import EmbeddedConversations
    from ..api.services import hosted
    from ..hooks import Hooks
    from ..settings import Settings

    settings = Settings()
    with store_lock(settings.resolved_database_url()):
        async with contextlib.AsyncExitStack() as stack:
            try:
                services = await stack.enter_async_context(hosted(settings, Hooks.with_builtins(settings)))
            except (OSError, ValueError) as exc:  # only the start: the session's own errors pass
                raise StartupError(f"cannot open the store {settings.resolved_database_url().split('@')[-1]}: {exc}") from exc
            log.info(
                "hosting conversations in %s (forwarding of sub-agent events: %s)",
                settings.resolved_database_url().split("@")[-1],
                "on" if settings.forward_subagent_events else "off",
            )
            yield EmbeddedConversations(services)


@contextlib.contextmanager
def store_lock(url: str) -> Any:
    """Hold an exclusive lock beside a SQLite store: the store assigns ``seq`` in this process,
    so a second process on the same file (another editor window) must not write to it."""
    if not url.startswith("sqlite:///") or url.endswith(":memory:"):
        yield
        return
    path = Path(url.removeprefix("sqlite:///") + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StartupError(
                f"another taskwire process uses the store {url.removeprefix('sqlite:///')}; give this one its own "
                "OH_WORKSPACE_PATH, or run `taskwire serve` and connect with `taskwire acp --url`"
            ) from None
        yield


async def protocol_streams(protocol_out: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """stdin for reading, the protocol's copy of stdout for writing, as asyncio streams."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, os.fdopen(protocol_out, "wb"))
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


def _configure_logging(log_file: str | None, level: str) -> None:
    handler: logging.Handler = logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
