"""The processes taskwire owns (the tracing worker, ACP peers, drivers): started out of the
server's process group, ended by the server in its own order.

A terminal's Ctrl-C, a container runtime or ``kill -- -PGID`` signals every process of the
server's group at once. A child in that group would die before the server's shutdown has
used it (the tracing worker with the spans it holds, a peer mid-answer), and print its own
traceback. So each child starts in a session (and process group) of its own
(``OWN_GROUP``): a group signal reaches only the server, whose shutdown then ends each child
with ``end_group``: stdin closed (the child's cue to finish), then SIGTERM, then SIGKILL to
the child's whole group, so nothing it started is left behind.

systemd's default stop signals every process of the unit's cgroup, sessions regardless: a
child that must finish its work (the tracing worker) ignores SIGINT and SIGTERM itself
(``ignore_stop_signals``) and ends when its stdin closes.

A library that spawns a child itself (the Claude Agent SDK starts Claude Code) gets the same by
running its command through ``in_own_group``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from typing import Any

OWN_GROUP: dict[str, Any] = {"start_new_session": True}
"""Keyword arguments for ``asyncio.create_subprocess_exec`` (or ``subprocess.Popen``)."""

EXIT_GRACE = 2.0
"""Seconds a child gets after its stdin closes, then again after SIGTERM."""


async def exited_within(process: asyncio.subprocess.Process, seconds: float) -> bool:
    """Whether ``process`` exits within ``seconds`` (the wait itself is not cancelled)."""
    try:
        await asyncio.wait_for(asyncio.shield(process.wait()), seconds)
    except TimeoutError:
        return False
    return True


def signal_group(process: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    """Send ``sig`` to the process group ``process`` leads (started with ``OWN_GROUP``)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


async def end_group(process: asyncio.subprocess.Process, grace: float = EXIT_GRACE) -> None:
    """End ``process`` and what it started: stdin closed, ``grace`` seconds, SIGTERM,
    ``grace`` seconds, SIGKILL; then SIGKILL to whatever of its group is left. Idempotent."""
    if process.stdin is not None:
        with contextlib.suppress(OSError, RuntimeError):
            process.stdin.close()
    if not await exited_within(process, grace):
        signal_group(process, signal.SIGTERM)
        if not await exited_within(process, grace):
            signal_group(process, signal.SIGKILL)
            await process.wait()
    signal_group(process, signal.SIGKILL)


def ignore_stop_signals() -> None:
    """For a child that ends when its stdin closes: SIGINT and SIGTERM sent to it along with
    the server (systemd signals the whole cgroup) no longer cut its work short."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def in_own_group(command: list[str]) -> list[str]:
    """``command`` run through this module, which gives it a session (and process group) of
    its own before it runs: for a child a library starts, without ``start_new_session``."""
    return [sys.executable, "-m", __name__, *command]


def main(argv: list[str]) -> None:
    """``python -m taskwire.child_processes COMMAND...``: COMMAND in a new session, same pid."""
    os.setsid()
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
