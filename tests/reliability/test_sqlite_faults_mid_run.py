"""SQLite fails under a running conversation, for real: its file system (a small tmpfs) fills
up, then has room again. As with PostgreSQL restarting, the run the store stopped says so
(``paused`` with its ``status_reason``), then carries on by itself. (A file system made
read-only under open files cannot be had this way: ``mount -o remount,ro`` refuses while the
database is open for writing.)"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

import pytest

from tests.faults import small_tmpfs
from tests.reliability.test_database_restart import assert_paused_then_finished, assert_quiet, start, ticking_script, ticks
from tests.servers import RunningServer, isolated_settings, taskwire_server, wait_for_status
from tests.services import wait_until


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 32 MiB tmpfs, or a skip where this machine does not let the test mount one."""
    with small_tmpfs(tmp_path / "disk", "32m") as folder:
        yield folder


async def ticked(server: RunningServer, cid: str) -> bool:
    return await ticks(server, cid) >= 3


async def assert_stopped_then_carried_on(server: RunningServer, cid: str) -> None:
    done = await wait_for_status(server.client, cid, {"finished", "error"}, timeout=120)
    assert done["status"] == "finished" and done["status_reason"] is None, done
    await assert_paused_then_finished(server, cid)


async def test_a_run_on_a_full_disk_says_so_then_resumes_once_there_is_room(
    tmp_path: Path, small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = isolated_settings(tmp_path, database_url=f"sqlite:///{small_disk}/taskwire.db", store_timeout=1)
    async with taskwire_server(settings) as server:
        cid = await start(server, ticking_script())
        await wait_until(lambda: ticked(server, cid), timeout=60, what="the run to make three tool calls")
        filler = small_disk / "filler"
        with filler.open("wb") as out:  # every free block (the write stops at full)
            with contextlib.suppress(OSError):
                while True:
                    out.write(b"\0" * 65536)
                    out.flush()
        try:
            await wait_until(lambda: server.runtime.loaded(cid) is None, timeout=60, what="the run to stop on the store")
        finally:
            filler.unlink()
        await assert_stopped_then_carried_on(server, cid)
    assert_quiet(caplog.records)
