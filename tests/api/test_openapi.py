"""The OpenAPI document is true: Schemathesis, every check on, every operation (DELETE, the
permission and AG-UI routes included), against a real server with a key, finds nothing.

It runs as a separate process (the CLI) against the server this test serves under uvicorn,
with the hooks in ``openapi/hooks.py`` (generated agents run ``true``) and the settings in
``openapi/schemathesis.toml``. Examples per operation stay few, for CI's time.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from tests.servers import REPO, isolated_settings, taskwire_server

HERE = Path(__file__).parent / "openapi"
KEY = "openapi-test-key"
DEMO = REPO / "config" / "demo" / "two_subagents.yaml"
MAX_EXAMPLES = os.environ.get("TASKWIRE_SCHEMATHESIS_EXAMPLES", "15")


async def test_schemathesis_finds_nothing_with_every_check_on(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path, session_api_keys=[KEY], llm_script=str(DEMO), max_body_bytes=65536)
    async with taskwire_server(settings) as server:
        document = (await server.client.get("/openapi.json")).json()
        operations = sum(len(methods) for methods in document["paths"].values())
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("OH_")},
            "SCHEMATHESIS_HOOKS": str(HERE / "hooks.py"),
            "PYTHONPATH": str(REPO),
        }
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "schemathesis.cli",
            "--config-file", str(HERE / "schemathesis.toml"),
            "run", f"{server.url}/openapi.json",
            "--checks", "all",
            "--header", f"X-Session-API-Key: {KEY}",
            "--max-examples", MAX_EXAMPLES,
            "--request-timeout", "60",
            "--workers", "1",
            "--no-color",
            cwd=tmp_path, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await asyncio.wait_for(process.communicate(), 1500)
    report = output.decode(errors="replace")
    assert process.returncode == 0, report[-20000:]
    assert f"Tested: {operations}" in report, report[-3000:]  # every operation of the document
