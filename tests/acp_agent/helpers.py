"""Driving ``taskwire acp`` with a real ACP client (the official SDK's, in ``clients/acp/``), and
reading what it saw in the domain's words."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable

from tests.services import need

REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "clients" / "acp" / "drive.mjs"
SDK = REPO / "clients" / "acp" / "node_modules" / "@agentclientprotocol" / "sdk"
SCRIPTS = Path(__file__).resolve().parent / "scripts"
TASKWIRE_ACP = [sys.executable, "-m", "taskwire.cli", "acp"]
RUN_TIMEOUT = 120.0


def embedded_env(tmp_path: Path, script: Path | str, *, forwarding: bool = True, **extra: str) -> dict[str, str]:
    """The environment of an embedded ``taskwire acp`` on its own store, with the scripted LLM
    (no ``OH_*`` of the test process leaks in)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    env.update(
        OH_WORKSPACE_PATH=str(tmp_path / "store"),
        OH_CONFIG_FILE=str(tmp_path / "no-config.toml"),
        OH_LLM_API="scripted",
        OH_LLM_SCRIPT=str(script),
        OH_IDLE_UNLOAD_SECONDS="0",
    )
    if forwarding:
        env["OH_FORWARD_SUBAGENT_EVENTS"] = "true"
    env.update(extra)
    return env


@dataclass
class Transcript:
    """Everything the client printed, in order."""

    lines: list[dict[str, Any]]
    stderr: str = ""

    def updates(self, step: int | None = None) -> list[dict[str, Any]]:
        """The ``update`` objects the SDK validated and handed over (of one step, or all)."""
        return [line["params"]["update"] for line in self.lines
                if line["kind"] == "update" and (step is None or line["step"] == step)]

    def result(self, step: int) -> Any:
        for line in self.lines:
            if line.get("step") == step and line["kind"] in ("result", "error"):
                if line["kind"] == "error":
                    raise AssertionError(f"step {step} ({line['op']}) failed: {line['error']}\n{self.stderr[-3000:]}")
                return line["result"]
        raise AssertionError(f"step {step} never answered; client saw: {self.lines[-5:]}\n{self.stderr[-3000:]}")

    def error(self, step: int) -> dict[str, Any]:
        line = next((line for line in self.lines if line.get("step") == step and line["kind"] in ("result", "error")), None)
        assert line is not None and line["kind"] == "error", f"step {step} did not fail: {line}"
        return line["error"]

    @property
    def raw(self) -> list[dict[str, Any]]:
        return [line["params"] for line in self.lines if line["kind"] == "raw"]

    @property
    def validated(self) -> list[dict[str, Any]]:
        return [line["params"] for line in self.lines if line["kind"] == "update"]

    @property
    def permissions(self) -> list[dict[str, Any]]:
        """The ``session/request_permission`` params the client received, in order."""
        return [line["params"] for line in self.lines if line["kind"] == "permission"]

    @property
    def sdk_errors(self) -> list[str]:
        return [line["message"] for line in self.lines if line["kind"] == "sdk_error"]


async def drive(
    steps: list[dict[str, Any]],
    *,
    env: dict[str, str],
    folder: Path,
    command: list[str] = TASKWIRE_ACP,
    on_line: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
    timeout: float = RUN_TIMEOUT,
    permissions: list[dict[str, Any]] | None = None,
    subagents: bool = False,
) -> Transcript:
    """Run the SDK client on ``steps`` against ``command`` (spawned by the client, with ``env``),
    until the steps are done and the agent exited. ``on_line`` sees each line as it comes.
    ``permissions``: how the client answers permission requests (rules, see ``drive.mjs``).
    ``subagents``: the client uses the SDK's unstable entry and declares
    ``clientCapabilities.subagents``."""
    node = shutil.which("node")
    need(node is not None, "node is not on PATH")
    need(SDK.is_dir(), "the ACP SDK client is not installed (make acp-client)")
    assert node is not None
    plan = folder / f"plan-{len(list(folder.glob('plan-*.json')))}.json"
    plan.write_text(json.dumps({"steps": steps, "permissions": permissions or [], "unstable": subagents}))
    process = await asyncio.create_subprocess_exec(
        node, str(DRIVER), str(plan), "--", *command,
        cwd=REPO, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    lines: list[dict[str, Any]] = []
    stderr = bytearray()

    async def read_stderr() -> None:
        assert process.stderr is not None
        while chunk := await process.stderr.read(65536):
            stderr.extend(chunk)

    errors = asyncio.create_task(read_stderr())
    try:
        async with asyncio.timeout(timeout):
            assert process.stdout is not None
            while raw := await process.stdout.readline():
                line = json.loads(raw)
                lines.append(line)
                if on_line is not None:
                    await on_line(line)
            await process.wait()
    except TimeoutError:
        raise AssertionError(f"the ACP client did not finish in {timeout:g} s; last lines {lines[-5:]}\n"
                             f"{stderr.decode(errors='replace')[-3000:]}") from None
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await errors
    return Transcript(lines, stderr.decode(errors="replace"))


# -- reading updates ------------------------------------------------------------------------


def stamp(update: dict[str, Any]) -> tuple[str | None, str | None]:
    """``(parentToolUseId, subagentId)`` of an update; ``(None, None)`` for the main agent's."""
    meta = update.get("_meta") or {}
    return (meta.get("claudeCode") or {}).get("parentToolUseId"), (meta.get("taskwire") or {}).get("subagentId")


def by_call(updates: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Every tool call's updates, in order."""
    calls: dict[str, list[dict[str, Any]]] = {}
    for update in updates:
        if update["sessionUpdate"] in ("tool_call", "tool_call_update"):
            calls.setdefault(update["toolCallId"], []).append(update)
    return calls


def texts(updates: list[dict[str, Any]], kind: str = "agent_message_chunk") -> dict[tuple[str | None, str | None], str]:
    """The text each stream (by its stamp) sent, its chunks joined."""
    joined: dict[tuple[str | None, str | None], str] = {}
    for update in updates:
        if update["sessionUpdate"] == kind:
            key = stamp(update)
            joined[key] = joined.get(key, "") + update["content"]["text"]
    return joined


def final_status(calls: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """Each call's last status."""
    return {call_id: [u["status"] for u in updates if "status" in u][-1] for call_id, updates in calls.items()}


def same_updates(live: list[dict[str, Any]], replay: list[dict[str, Any]]) -> None:
    """A replay shows what the live run showed: each call's updates exactly, each stream's text
    whole (live it streamed in chunks, and deltas may race ahead of the tool result before them)."""
    assert by_call(replay) == by_call(live)
    assert texts(replay) == texts(live)
