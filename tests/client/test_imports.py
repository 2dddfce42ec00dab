"""The client is a client: it speaks HTTP and WebSocket and reads the wire format, nothing more."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def test_importing_the_client_loads_nothing_of_the_server() -> None:
    # (rich may load here: httpx imports its own CLI when rich is installed; the client venv of
    # tests/test_distributions.py has none.)
    probe = ("import sys, taskwire_client, taskwire_client.cli, taskwire_client.watch; "
             "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
             "{'taskwire', 'fastapi', 'starlette', 'uvicorn', 'redis', 'asyncpg', 'aiosqlite', 'yaml'})))")
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    assert not loaded, loaded
