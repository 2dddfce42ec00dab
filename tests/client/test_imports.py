"""The client is a client: it speaks HTTP and WebSocket and reads the wire format, nothing more."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def test_importing_the_client_loads_no_runtime_api_or_settings() -> None:
    probe = "import sys, server.client; print(' '.join(sorted(m for m in sys.modules if m.startswith('server.'))))"
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    forbidden = [m for m in loaded if m.split(".")[1] in {"runtime", "api", "cli", "bus", "settings", "llm", "acp", "claude_sdk"}]
    assert not forbidden, forbidden
