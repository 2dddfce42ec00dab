"""A PostgreSQL cluster of a test's own, which it may stop, start and restart.

The shared server (127.0.0.1:5432) is never restarted: other tests use it. This one is made
with ``initdb`` in a temporary folder of its own (under ``/tmp``, removed by ``close``),
listens on a free port, trusts local connections and is run as the ``postgres`` user when the
test runs as root (``initdb`` refuses root).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.services import free_port, need


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


def need_private_postgres() -> Path:
    """The folder of ``initdb``/``pg_ctl``; skips (fails in CI) when they are missing."""
    bin_dir = _bin_dir()
    need(bin_dir is not None, "PostgreSQL's server binaries (/usr/lib/postgresql/*/bin) are not installed")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            need(False, "running as root, and there is no `postgres` user to run initdb as")
    assert bin_dir is not None
    return bin_dir


class PrivatePostgres:
    """One private cluster; ``url`` reaches its ``postgres`` database."""

    def __init__(self) -> None:
        self._bin = need_private_postgres()
        # Not under pytest's folder: concurrent sessions set that back to 0700 (root only).
        self._folder = Path(tempfile.mkdtemp(prefix="taskwire-pg-"))
        self._data = self._folder / "data"
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self._bin / tool), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} {' '.join(args)} failed: {done.stdout}{done.stderr}")

    def init(self) -> None:
        self._folder.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self._folder, "postgres", "postgres")
        self._run("initdb", "-D", str(self._data), "-A", "trust", "-U", "postgres", "--no-sync")
        options = f"-p {self.port} -k {self._folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        (self._folder / "options").write_text(options)

    def _ctl(self, action: str) -> None:
        extra = [] if action == "stop" else ["-o", (self._folder / "options").read_text(), "-l", str(self._folder / "log")]
        self._run("pg_ctl", action, "-D", str(self._data), "-w", "-t", "60", "-m", "fast", *extra)

    def start(self) -> None:
        self._ctl("start")

    def stop(self) -> None:
        self._ctl("stop")

    def restart(self) -> None:
        self._ctl("restart")

    def close(self) -> None:
        try:
            self.stop()
        except RuntimeError:
            pass  # not running
        shutil.rmtree(self._folder, ignore_errors=True)
