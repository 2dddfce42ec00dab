"""``taskwire serve`` refuses what would be unsafe, and says why."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path

from tests.services import POSTGRES_URL, free_port, need_postgres

REPO = Path(__file__).resolve().parents[2]


async def serve(*args: str, **env: str) -> tuple[int, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "taskwire.cli", "serve", *args, cwd=REPO,
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


async def read_until_banner(proc: asyncio.subprocess.Process) -> list[str]:
    """stderr lines up to and including the banner's first line ("taskwire on ...")."""
    assert proc.stderr is not None
    lines = []
    while True:
        line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
        assert line, f"the server exited before its banner: {lines}"
        lines.append(line.rstrip("\n"))
        if line.startswith("taskwire on "):
            return lines


async def test_the_banner_comes_once_the_port_accepts_connections_and_its_commands_run_as_printed(tmp_path: Path) -> None:
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "taskwire.cli", "serve", "--port", str(port), cwd=REPO,
        env={**clean, "COLUMNS": "300", "OH_WORKSPACE_PATH": str(tmp_path), "OH_SESSION_API_KEYS": '["k1"]'},
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )
    try:
        before = await read_until_banner(proc)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)  # listening as it says
        writer.close()
        await writer.wait_closed()
        rest = [(await asyncio.wait_for(proc.stderr.readline(), 10)).decode().rstrip() for _ in range(7)]  # type: ignore[union-attr]
    finally:
        proc.terminate()
        await proc.wait()
    assert before == [f"taskwire on http://127.0.0.1:{port}  (API docs: http://127.0.0.1:{port}/docs)"]
    text = "\n".join(rest)
    assert "python -m websockets" not in text
    curl = next(line for line in rest if "curl" in line)
    assert "-H 'X-Session-API-Key: <key>'" in curl
    watch = next(line.split() for line in rest if " watch <id>" in line)
    assert watch[0] == ".venv/bin/taskwire" or watch[0] == "taskwire"
    assert watch[-2:] == ["--api-key", "<key>"]
    check = await asyncio.create_subprocess_exec(
        *([str(REPO / watch[0])] if "/" in watch[0] else [watch[0]]), "watch", "--help", cwd=REPO,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )
    assert await check.wait() == 0


async def test_a_port_in_use_is_said_before_any_banner(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, output = await serve("--port", str(port), OH_WORKSPACE_PATH=str(tmp_path))
    assert code == 2
    assert f"cannot listen on 127.0.0.1:{port}" in output and "in use" in output
    assert "taskwire on" not in output


async def test_settings_in_the_wrong_form_end_start_up_with_one_line(tmp_path: Path) -> None:
    cases = {
        "OH_SESSION_API_KEYS": ("s3cret", "a JSON list of strings"),
        "OH_FORWARD_SUBAGENT_EVENTS": ("maybe", "true or false"),
        "OH_WORKSPACE_ROOTS": ("/srv/projects", "a JSON list of paths"),
        "OH_PORT": ("eighty", "an integer"),
    }
    for name, (value, form) in cases.items():
        code, output = await serve(OH_WORKSPACE_PATH=str(tmp_path), **{name: value})
        assert code == 2, output
        lines = output.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in output, output
        assert name in lines[0] and form in lines[0], output
        assert value not in lines[0] or name == "OH_WORKSPACE_ROOTS", output  # a value may be a key: never echoed


async def test_a_postgres_database_that_does_not_exist_ends_start_up_with_one_line(tmp_path: Path) -> None:
    need_postgres()
    missing = POSTGRES_URL.rsplit("/", 1)[0] + "/taskwire_no_such_database"
    code, output = await serve(OH_DATABASE_URL=missing, OH_WORKSPACE_PATH=str(tmp_path))
    assert code == 2, output
    assert "Traceback" not in output and len(output.strip().splitlines()) == 1, output
    assert "does not exist" in output and "OH_DATABASE_URL" in output
