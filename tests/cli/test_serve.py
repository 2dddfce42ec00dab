"""``taskwire serve`` refuses what would be unsafe, and says why."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


async def serve(*args: str, **env: str) -> tuple[int, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "server.cli", "serve", *args, cwd=REPO,
        env={**clean, "COLUMNS": "200", **env}, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode()


async def test_serve_refuses_a_public_address_without_an_api_key(tmp_path: Path) -> None:
    code, output = await serve("--host", "0.0.0.0", OH_WORKSPACE_PATH=str(tmp_path))
    assert code == 2
    assert "refusing to bind 0.0.0.0" in output and "OH_SESSION_API_KEYS" in output


async def test_serve_refuses_a_database_it_cannot_open(tmp_path: Path) -> None:
    code, output = await serve("--port", "1", OH_DATABASE_URL="mysql://nowhere/db", OH_WORKSPACE_PATH=str(tmp_path))
    assert code != 0 and "OH_DATABASE_URL" in output
