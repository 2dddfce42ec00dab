"""Fault injection with real faults: a cancellation at a chosen await, a cut network link.

``CancelAt`` cancels the task a coroutine runs in right before the coroutine's n-th
suspension passes out to the event loop: the task then cancels the future it was about to wait
on, exactly as an interrupt landing at that ``await`` would. ``cancel_at_every_await`` tries
every n in turn, until the coroutine ends before its n-th suspension.

``TcpProxy`` forwards a local port to a server; ``cut`` drops every connection through it and
refuses new ones (a lost network, a restarted database), ``mend`` lets them through again.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from pathlib import Path
from typing import Any, Awaitable, Callable, Coroutine, Generator

import pytest

from tests.services import free_port


class CancelAt:
    """Awaits ``coro``, cancelling the current task just before its ``n``-th suspension."""

    def __init__(self, coro: Coroutine[Any, Any, Any], n: int) -> None:
        self.coro = coro
        self.n = n
        self.suspensions = 0
        self.injected = False

    def __await__(self) -> Generator[Any, Any, Any]:
        inner = self.coro.__await__()
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                yielded = inner.throw(error) if error is not None else inner.send(value)
            except StopIteration as stop:
                return stop.value
            self.suspensions += 1
            if self.suspensions == self.n:
                task = asyncio.current_task()
                assert task is not None
                task.cancel()
                self.injected = True
            try:
                value, error = (yield yielded), None
            except BaseException as exc:  # what the task throws in: CancelledError, mostly
                value, error = None, exc


async def cancel_at_every_await(
    write: Callable[[int], Coroutine[Any, Any, Any]],
    check: Callable[[int, bool], Awaitable[None]],
    *,
    limit: int = 500,
) -> int:
    """For n = 1, 2, ...: run ``write(n)`` in a task of its own, cancelled at its n-th
    suspension, then ``check(n, completed)``. Stops after the first n the write finished
    without reaching; returns that n (so the caller can see every await was tried)."""
    for n in range(1, limit):
        attempt = CancelAt(write(n), n)

        async def run(attempt: CancelAt = attempt) -> Any:
            return await attempt

        task = asyncio.ensure_future(run())
        try:
            await task
            completed = True
        except asyncio.CancelledError:
            if not task.cancelled():
                raise  # the test's own task is being cancelled
            completed = False
        await check(n, completed)
        if not attempt.injected:
            assert completed, f"write {n} was not cancelled, yet did not complete"
            return n
    raise AssertionError(f"the write still suspended {limit} times")


class TcpProxy:
    """Forwards ``127.0.0.1:port`` to ``host:target_port`` until ``cut``."""

    def __init__(self, host: str, target_port: int) -> None:
        self.host, self.target_port = host, target_port
        self.port = free_port()
        self._server: asyncio.Server | None = None
        self._links: set[asyncio.StreamWriter] = set()
        self._pipes: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._link, "127.0.0.1", self.port)

    async def _link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.target_port)
        except OSError:
            writer.close()
            return
        self._links.update((writer, up_writer))
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pipe(source, sink))
            self._pipes.add(task)
            task.add_done_callback(self._pipes.discard)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.CancelledError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()
        self._links.discard(writer)

    async def cut(self) -> None:
        """Drop every connection and refuse new ones (the port stops listening)."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._links):
            writer.transport.abort()
        self._links.clear()
        for task in list(self._pipes):
            task.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)

    async def mend(self) -> None:
        """Listen again on the same port."""
        await self.start()

    async def close(self) -> None:
        await self.cut()


@contextlib.contextmanager
def small_tmpfs(folder: Path, size: str) -> Generator[Path, None, None]:
    """A tmpfs of ``size`` (``4m``) mounted at ``folder`` (a disk that fills up for real), or a
    skip where this machine does not let the test mount one."""
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode(errors='replace').strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)

