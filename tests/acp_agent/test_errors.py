"""What goes wrong reads clearly on the ACP side: a failed run is the prompt's JSON-RPC error
with its reason, a run out of iterations stops with ``max_turn_requests``, and bad requests are
JSON-RPC errors naming the problem. The session survives each of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from taskwire.cli.acp import store_lock
from tests.acp_agent.helpers import REPO, SCRIPTS, TASKWIRE_ACP, by_call, drive, embedded_env

FAILING = json.dumps({"lanes": [{"name": "main", "turns": [{"error": "the model is down"}]}]})
THINKING = {"tool_calls": [{"name": "think", "arguments": {"thought": "Still thinking."}}]}
ENDLESS = json.dumps({"lanes": [{"name": "main", "turns": [THINKING, THINKING]}]})
"""Never finishes: with ``max_iterations=2`` the run stops after two thoughts."""


def _agent(script: str, **fields: object) -> dict:
    return {"taskwire": {"agent": {"kind": "native", "llm": {"api": "scripted", "script": script}, **fields}}}


async def test_failures_and_bad_requests_are_json_rpc_errors_with_the_reason(tmp_path: Path) -> None:
    project = str(tmp_path / "project")
    steps = [
        {"op": "initialize"},
        {"op": "new", "cwd": project, "meta": _agent(FAILING)},
        {"op": "prompt", "text": "Go.", "stop_on_error": False},
        {"op": "new", "cwd": project, "meta": _agent(ENDLESS, max_iterations=2)},
        {"op": "prompt", "text": "Go.", "stop_on_error": False},
        {"op": "new", "cwd": project, "meta": {"taskwire": {"agent": {"kind": "nonsense"}}}, "stop_on_error": False},
        {"op": "new", "cwd": "relative/path", "stop_on_error": False},
        {"op": "prompt", "session": "no-such-session", "text": "Go.", "stop_on_error": False},
        {"op": "load", "session": "no-such-conversation", "cwd": project, "stop_on_error": False},
    ]
    transcript = await drive(steps, env=embedded_env(tmp_path, SCRIPTS / "two_and_nested.yaml"), folder=tmp_path)
    failed = transcript.error(2)
    assert failed["code"] == -32603
    assert "the model is down" in failed["message"] and failed["data"] == {"code": "llm_error"}

    assert transcript.result(4)["stopReason"] == "max_turn_requests"
    thoughts = by_call(transcript.updates(4))
    assert len(thoughts) == 2 and all(u[0]["kind"] == "think" for u in thoughts.values())

    invalid = transcript.error(5)
    assert invalid["code"] == -32602 and "agent" in invalid["message"]
    assert transcript.error(6) == {"code": -32602, "message": "cwd must be an absolute path, not 'relative/path'",
                                   "data": {"code": "invalid_cwd"}}
    unknown = transcript.error(7)
    assert unknown["code"] == -32002 and "no-such-session" in unknown["message"]
    assert transcript.error(8)["code"] == -32002
    assert transcript.sdk_errors == []


def test_stdout_carries_only_the_protocol() -> None:
    """A stray print lands on stderr: the protocol keeps its own copy of stdout."""
    code = "from taskwire.cli.acp import claim_stdout; import os; fd = claim_stdout(); print('stray', flush=True); os.write(fd, b'protocol\\n')"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=60)
    assert (done.stdout, done.stderr) == (b"protocol\n", b"stray\n")


def test_a_second_embedded_process_on_the_same_store_refuses_to_start(tmp_path: Path) -> None:
    env = embedded_env(tmp_path, SCRIPTS / "two_and_nested.yaml")
    with store_lock(f"sqlite:///{tmp_path / 'store' / 'taskwire.db'}"):
        done = subprocess.run(TASKWIRE_ACP, cwd=REPO, env=env, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stdout == b""
    assert b"another taskwire process uses the store" in done.stderr
    assert os.listdir(tmp_path / "store") == ["taskwire.db.lock"]  # it opened nothing
