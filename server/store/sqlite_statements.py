"""Single-statement writes of many callers, run together (the conversation records' writes).

A busy server writes a conversation record thousands of times a second (a model call's
usage, a status, a sub-agent's result). Each write on its own costs a turn of the write lock
and a trip to the writer's thread, and a trip ends only when the event loop gets round to
it: under load that is milliseconds, while the lock is held and every append waits. So the
statements that queue up while one group runs are run as the next group: one turn of the
lock and one trip for all of them, each statement in autocommit (atomic by itself, and one
that fails fails alone).

The group runs in a task the store owns (``owned.py``): a caller cancelled while it waits
waits for its statement to end, then sees its ``CancelledError``; the statement is never cut
half way.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections import deque
from typing import Any, AsyncContextManager, Callable, Iterable, Sequence

import aiosqlite

from .owned import OwnedWrites, settle
from .sqlite_faults import fault

GROUP = 64
"""Statements run in one trip at most (each is a record's write: about 50 microseconds in
SQLite; one in its own transaction costs no more than one of a group's)."""

Rows = list[Sequence[Any]]


class _Statement:
    __slots__ = ("sql", "params", "done")

    def __init__(self, sql: str, params: Iterable[Any] | dict[str, Any], done: asyncio.Future[Rows]) -> None:
        self.sql = sql
        self.params = params
        self.done = done


class StatementGroups:
    """Runs ``SQLiteDatabase.write_statement``'s statements, a group at a time, each group
    under ``locked`` (the writer connection) in a task of ``owned``."""

    def __init__(self, locked: Callable[[], AsyncContextManager[aiosqlite.Connection]], owned: OwnedWrites) -> None:
        self._locked = locked
        self._owned = owned
        self._queue: deque[_Statement] = deque()
        self._runner: asyncio.Task[None] | None = None

    async def run(self, sql: str, params: Iterable[Any] | dict[str, Any]) -> Rows:
        """Run ``sql`` with the next group; its rows (``RETURNING``)."""
        done: asyncio.Future[Rows] = asyncio.get_running_loop().create_future()
        self._queue.append(_Statement(sql, params, done))
        if self._runner is None or self._runner.done():
            self._runner = self._owned.start(self._run_groups())
        return await settle(done)

    async def _run_groups(self) -> None:
        while self._queue:
            group = [self._queue.popleft() for _ in range(min(GROUP, len(self._queue)))]
            try:
                async with self._locked() as conn:
                    results, failure = await _run_in_thread(conn, group)
                    for statement, result in zip(group, results):
                        _resolve(statement.done, result)
                    if failure is not None:
                        raise failure  # a fault of the database: ``locked`` marks it unhealthy
            except BaseException as exc:  # the rest of the group fails with it
                for statement in group:
                    _resolve(statement.done, exc)
                if not isinstance(exc, Exception):  # the loop is going away: nobody is left waiting
                    while self._queue:
                        _resolve(self._queue.popleft().done, exc)
                    raise


def _resolve(done: asyncio.Future[Rows], result: Rows | BaseException) -> None:
    if done.done():
        return
    if isinstance(result, asyncio.CancelledError):
        done.cancel()
    elif isinstance(result, BaseException):
        done.set_exception(result)
    else:
        done.set_result(result)


async def _run_in_thread(
    conn: aiosqlite.Connection, group: list[_Statement]
) -> tuple[list[Rows | BaseException], BaseException | None]:
    """Every statement of ``group`` in one trip to ``conn``'s thread: each one's rows or
    error, in order; a database fault (``fault``) stops the group there and is returned apart."""

    def run_all() -> tuple[list[Rows | BaseException], BaseException | None]:
        raw: sqlite3.Connection = conn._conn  # aiosqlite's thread owns it: this runs there
        results: list[Rows | BaseException] = []
        for statement in group:
            try:
                results.append(raw.execute(statement.sql, statement.params).fetchall())
            except Exception as exc:
                if fault(exc) is not None:
                    return results, exc
                results.append(exc)  # this statement's own error (malformed input)
        return results, None

    # aiosqlite has no public way to run a function on its thread; ``_execute`` is how its
    # own methods do it (aiosqlite is pinned, 0.22.1).
    return await conn._execute(run_all)
