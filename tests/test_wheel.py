"""The wheel and the sdist, installed in a fresh venv with no checkout, started in an empty folder:
the server comes up, serves the viewer, runs the demo to ``finished``; the scripted LLM starts.

What an operator does after ``pip install taskwire-*.whl``. The sources are copied out of the
repository first (tracked and new files, as git sees them), so building leaves nothing in the
checkout; dependencies come from pip's index and cache as for any install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from tests.conftest import REPO
from tests.services import free_port, need, wait_until

pytestmark = pytest.mark.timeout(900)

INSTALL_TIMEOUT = 600


def _sources(into: Path) -> Path:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO, check=True, capture_output=True,
    ).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file() and not name.startswith(("clients/", "peers/", "bench/", "tests/")):
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist and the wheel, built as CI would: ``python -m build`` on a copy of the sources."""
    need(shutil.which("git") is not None, "git is not installed")
    source = _sources(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(source)],
        capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return {"wheel": next(out.glob("taskwire-*.whl")), "sdist": next(out.glob("taskwire-*.tar.gz"))}


def _clean_env(folder: Path) -> dict[str, str]:
    """This process's environment without taskwire's settings or a path back to the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OH_", "OTEL_", "PYTHON", "VIRTUAL_ENV"))}
    return {**env, "HOME": str(folder), "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}


@pytest.fixture(params=["wheel", "sdist"])
def installed(request: pytest.FixtureRequest, artifacts: dict[str, Path], tmp_path: Path) -> Iterator[Path]:
    """A fresh venv with the artifact installed; yields its ``bin`` folder."""
    root = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(root)
    bin_dir = root / "bin"
    env = {**_clean_env(tmp_path), "HOME": os.environ.get("HOME", str(tmp_path))}  # pip's cache
    done = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q", str(artifacts[request.param])],
        capture_output=True, text=True, env=env, timeout=INSTALL_TIMEOUT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    yield bin_dir


def _start(command: list[str], folder: Path, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(command, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def _answers(url: str, process: subprocess.Popen[bytes], log: Path) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"exited with {process.returncode}: {log.read_text(errors='replace')[-3000:]}")
    try:
        async with httpx.AsyncClient(timeout=5) as client:
            await client.get(url)
        return True
    except httpx.TransportError:
        return False


async def test_an_installed_package_serves_the_viewer_runs_the_demo_and_starts_the_mock_llm_away_from_the_checkout(
    installed: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    env = _clean_env(tmp_path)
    where = subprocess.run([str(installed / "python"), "-c", "import server; print(server.__file__)"],
                           cwd=folder, env=env, capture_output=True, text=True, check=True).stdout
    assert str(REPO) not in where and str(installed.parent) in where  # the installed copy, not the checkout

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    serve_log = tmp_path / "serve.log"
    server = _start([str(installed / "taskwire"), "serve", "--port", str(port)], folder, serve_log,
                    {**env, "OH_FORWARD_SUBAGENT_EVENTS": "true"})
    try:
        await wait_until(lambda: _answers(f"{url}/alive", server, serve_log), timeout=120, what="the installed server")
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            page = await client.get("/")
            script = await client.get("/static/app.js")
            types = (await client.get("/api/sub-agents")).json()
        assert page.status_code == 200 and "app.js" in page.text
        assert script.status_code == 200
        names = {t["name"] for t in types}
        assert {"general-purpose", "code-reviewer"} <= names  # a built-in type and a bundled plugin's

        demo = subprocess.run([str(installed / "taskwire"), "demo", "--url", url], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=300)
        assert demo.returncode == 0, demo.stdout + demo.stderr + serve_log.read_text(errors="replace")[-3000:]
        assert demo.stdout.rstrip().splitlines()[-1] == "run ended: finished"
        assert "call_main_1_0" in demo.stdout.split("terminal: echo subagent-a")[0]  # a sub-agent row, under its task
    finally:
        _stop(server)

    mock_port = free_port()
    mock_log = tmp_path / "mock.log"
    mock = _start([str(installed / "taskwire"), "mock-llm", "--script", "config/demo/hello.yaml", "--port", str(mock_port)],
                  folder, mock_log, env)
    try:
        status = f"http://127.0.0.1:{mock_port}/script/status"
        await wait_until(lambda: _answers(status, mock, mock_log), timeout=60, what="the installed mock-llm")
        async with httpx.AsyncClient(timeout=30) as client:
            answer = await client.post(f"http://127.0.0.1:{mock_port}/v1/chat/completions",
                                       json={"model": "scripted", "messages": [{"role": "user", "content": "Say hello."}]})
        assert answer.status_code == 200, answer.text
        assert answer.json()["choices"][0]["message"]
    finally:
        _stop(mock)
