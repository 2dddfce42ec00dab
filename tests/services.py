"""PostgreSQL and Redis for tests: the shared servers on this machine, and private ones.

The shared servers are the ones ``make services`` starts (``scripts/ensure-services.sh``):
PostgreSQL at 127.0.0.1:5432 (database ``test``, trust auth) and Redis at 127.0.0.1:6379.
Tests isolate themselves there: a schema of their own in PostgreSQL, unique ids in Redis.
A test that stops Redis runs a private ``redis-server`` instead.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Coroutine

import asyncpg
import pytest
from redis.asyncio import Redis

IN_CI = bool(os.environ.get("CI"))


def need(condition: bool, reason: str) -> None:
    """Skip when ``condition`` is false, except in CI, where a missing dependency is a failure."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required in CI: {reason}")
    pytest.skip(reason)


POSTGRES_URL = os.environ.get("TASKWIRE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("TASKWIRE_TEST_REDIS", "redis://127.0.0.1:6379/0")


def _run_apart(coro: Coroutine[Any, Any, Any]) -> Any:
    # Synchronous fixtures run outside the test's event loop: give the coroutine a loop of
    # its own in another thread, leaving this thread's loop (and its policy) untouched.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def _postgres_answers() -> bool:
    try:
        conn = await asyncpg.connect(POSTGRES_URL, timeout=3)
    except (OSError, asyncpg.PostgresError, asyncio.TimeoutError):
        return False
    await conn.close()
    return True


async def _redis_answers(url: str = REDIS_URL) -> bool:
    client = Redis.from_url(url, socket_connect_timeout=3)
    try:
        return bool(await client.ping())
    except Exception:
        return False
    finally:
        await client.aclose()


@functools.cache
def postgres_available() -> bool:
    return _run_apart(_postgres_answers())


@functools.cache
def redis_available() -> bool:
    return _run_apart(_redis_answers())


def need_postgres() -> None:
    need(postgres_available(), f"PostgreSQL does not answer at {POSTGRES_URL} (run `make services`)")


OPENHANDS_PYTHON = os.environ.get(
    "TASKWIRE_TEST_OPENHANDS_PYTHON", str(Path(__file__).resolve().parents[1] / ".venv-openhands/bin/python")
)


def need_openhands() -> str:
    """The OpenHands driver's interpreter (``make openhands``); skips (fails in CI) without it."""
    python = Path(OPENHANDS_PYTHON)
    installed = "TASKWIRE_TEST_OPENHANDS_PYTHON" in os.environ or (python.parents[1] / ".installed").exists()
    need(python.exists() and installed, f"no OpenHands venv at {OPENHANDS_PYTHON} (run `make openhands`; it needs Python 3.12)")
    return OPENHANDS_PYTHON


OPENHANDS_PREVIOUS_PYTHON = str(Path(__file__).resolve().parents[1] / ".venv-openhands-previous/bin/python")


def need_openhands_previous() -> str:
    """The interpreter of the OpenHands release before the pinned one, with the plugin
    (``make openhands-previous``); skips (fails in CI) without it."""
    python = Path(OPENHANDS_PREVIOUS_PYTHON)
    need(python.exists() and (python.parents[1] / ".installed").exists(),
         f"no previous OpenHands release at {python} (run `make openhands-previous`; it needs Python 3.12)")
    return OPENHANDS_PREVIOUS_PYTHON


def need_redis() -> None:
    need(redis_available(), f"Redis does not answer at {REDIS_URL} (run `make services`)")


async def _admin(sql: str) -> None:
    conn = await asyncpg.connect(POSTGRES_URL)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@functools.cache
def _shared_extensions() -> None:
    # The store creates pg_trgm where it is missing, in its own schema; a test's schema is
    # dropped with CASCADE, which would take the extension (and the indexes of every other
    # test using it) along. Made once in ``public``, it outlives the tests' schemas.
    try:
        _run_apart(_admin("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public"))
    except asyncpg.UniqueViolationError:  # another test process made it at the same moment
        pass


def postgres_schema_url(request: pytest.FixtureRequest) -> str:
    """A URL to a new, empty schema of the test database, dropped when the test ends.
    Skips (fails in CI) when PostgreSQL does not answer."""
    need_postgres()
    schema = f"taskwire_test_{uuid.uuid4().hex[:12]}"
    _shared_extensions()
    _run_apart(_admin(f"CREATE SCHEMA {schema}"))
    request.addfinalizer(lambda: _run_apart(_admin(f"DROP SCHEMA IF EXISTS {schema} CASCADE")))
    return f"{POSTGRES_URL}?search_path={schema}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    """A ``redis-server`` of the test's own, on a free port, that the test may stop and start."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.folder = folder
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> None:
        binary = shutil.which("redis-server")
        need(binary is not None, "redis-server is not installed")
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        await wait_until(lambda: _redis_answers(self.url), timeout=20, what=f"redis-server on port {self.port} to answer")

    async def stop(self) -> None:
        """Kill the server (as a crash would) and wait for it to be gone."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            await asyncio.to_thread(self.process.wait)
        self.process = None


@asynccontextmanager
async def private_redis(folder: Path) -> AsyncIterator[PrivateRedis]:
    server = PrivateRedis(folder)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def wait_until(check: Callable[[], Awaitable[bool] | bool], *, timeout: float, what: str) -> None:
    """Poll ``check`` until it holds; fail with ``what`` after ``timeout`` seconds. For
    conditions no event announces (another process's state)."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.05)
