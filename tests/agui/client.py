"""The real AG-UI client (``clients/agui/agui_client.mjs``: @ag-ui/client 1.0.0 in Node) driven
from a test, and assertions in AG-UI's words."""

from __future__ import annotations

import asyncio
import json
import shutil
from typing import Any, Iterable

from tests.servers import REPO, RunningServer
from tests.services import need

CLIENT = REPO / "clients" / "agui" / "agui_client.mjs"
INSTALLED = REPO / "clients" / "agui" / "node_modules" / "@ag-ui" / "client"


async def run_client(server: RunningServer, *steps: dict[str, Any]) -> list[dict[str, Any]]:
    """Play ``steps`` (``run`` / ``connect``) with the real client; each step's report:
    ``frames`` (``{id, event}`` as sent), ``received`` (what the client's pipeline passed on),
    ``error``, ``schemaErrors``, ``warnings``, ``result``, ``newMessages``."""
    need(shutil.which("node") is not None and INSTALLED.exists(), "the AG-UI client is not installed (make agui-client)")
    headers = {"X-Session-API-Key": server.settings.session_api_keys[0]} if server.settings.session_api_keys else {}
    plan = {"base": server.url, "headers": headers, "steps": list(steps)}
    proc = await asyncio.create_subprocess_exec(
        "node", str(CLIENT), cwd=CLIENT.parent,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(json.dumps(plan).encode()), 180)
    assert proc.returncode == 0, err.decode(errors="replace")[-3000:]
    return json.loads(out)["steps"]


def assert_accepted(step: dict[str, Any]) -> None:
    """The client's own verification took the whole stream, every frame fits @ag-ui/core's
    schema, and the client had nothing to strip or repair."""
    assert step["error"] is None, step["error"]
    assert step["schemaErrors"] == [], step["schemaErrors"]
    assert step["warnings"] == [], step["warnings"]
    assert step["frames"], "no events arrived"
    assert [e["type"] for e in step["received"]] == [f["event"]["type"] for f in step["frames"]]


def events(step: dict[str, Any]) -> list[dict[str, Any]]:
    return [frame["event"] for frame in step["frames"]]


def of_type(items: Iterable[dict[str, Any]], *types: str) -> list[dict[str, Any]]:
    return [e for e in items if e["type"] in types]
