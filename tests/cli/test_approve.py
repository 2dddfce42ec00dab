"""``taskwire watch`` prints each permission request with the command that answers it, and
``taskwire approve`` answers it."""

from __future__ import annotations

import argparse
import asyncio
import io
import sys
from pathlib import Path

import pytest

from taskwire_client.approve import run_approve
from taskwire_client.terminal import Terminal
from taskwire_client.watch import run_watch
from tests.api.helpers import create, scripted_agent
from tests.conftest import REPO
from tests.permissions.helpers import one_asker_script, pending, wait_pending
from tests.servers import isolated_settings, taskwire_server


@pytest.mark.parametrize("forwarding", [True, False], ids=["forwarding-on", "forwarding-off"])
async def test_watch_prints_the_request_and_approve_answers_it(tmp_path: Path, forwarding: bool) -> None:
    settings = isolated_settings(tmp_path, forward_subagent_events=forwarding, session_api_keys=["k"])
    async with taskwire_server(settings) as server:
        info = await create(server, agent=scripted_agent(one_asker_script("echo approved-here"), approval="always"),
                            initial_message="Go.")
        cid = info["id"]
        out = io.StringIO()
        watch_args = argparse.Namespace(url=server.url, conversation_id=cid, api_key="k", timeout=120.0)
        watching = asyncio.create_task(run_watch(watch_args, Terminal(out)))
        [request] = await wait_pending(server, cid, 1)
        rid = request["request_id"]

        async def printed() -> None:
            while rid not in out.getvalue():
                await asyncio.sleep(0.05)

        await asyncio.wait_for(printed(), 60)
        approve = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "taskwire.cli", "approve", cid, rid, "--url", server.url, "--api-key", "k",
            cwd=REPO, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await asyncio.wait_for(approve.communicate(), 60)
        assert approve.returncode == 0, (stdout, stderr)
        assert "allowed" in stdout.decode()
        assert await watching == 0
        # The first answer won: a second is refused, saying so.
        again = io.StringIO()
        args = argparse.Namespace(url=server.url, conversation_id=cid, request_id=rid, api_key="k",
                                  reject=True, always=False, reason="too late")
        assert await run_approve(args, Terminal(again)) == 1
        assert "409 permission_resolved" in again.getvalue()
        unknown = argparse.Namespace(**{**vars(args), "request_id": "nope"})
        assert await run_approve(unknown, Terminal(io.StringIO())) == 2
        [entry] = await pending(server, cid, status="all")
        assert entry["resolution"]["answered_by"] == "rest" and entry["status"] == "allowed"
    output = out.getvalue()
    assert "the main agent" not in output
    assert f"task-1 Ask asks to run terminal: echo approved-here" in output
    assert f"approve {cid} {rid} --url {server.url} --api-key <key>" in output
    assert f"approve {cid} {rid} --url {server.url} --api-key <key> --reject --reason" in output
    assert output.rstrip().endswith("run ended: finished")
