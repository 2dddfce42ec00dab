"""The distributions, built by ``make dist`` and installed in fresh venvs with no checkout, used
from a folder that holds a ``server.py`` and a ``server/`` package of the user's own (most web
projects have one): ``taskwire`` serves the viewer, runs the demo to ``finished`` and starts the
scripted LLM; ``taskwire-client`` alone follows a live conversation's tree with
``python -m taskwire_client watch`` and installs nothing of the server's.

What an operator does after ``pip install taskwire-*.whl``, and an application that only follows
conversations after ``pip install taskwire-client``. ``make dist`` builds from a copy of the
sources (tracked and new files, as git sees them), so building leaves nothing in the checkout;
dependencies come from pip's index and cache as for any install.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import AsyncIterator, Iterator

import httpx
import pytest

from tests.conftest import REPO
from tests.services import free_port, need, need_openhands, wait_until

pytestmark = pytest.mark.timeout(900)

INSTALL_TIMEOUT = 600


SERVER_ONLY = ("fastapi", "starlette", "uvicorn", "asyncpg", "redis", "aiosqlite", "pyyaml", "rich",
               "opentelemetry-sdk", "prometheus-client", "agent-client-protocol", "claude-agent-sdk")
"""Dependencies of the server that a client has no use for (the pyproject's list is checked too)."""


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\[<>=!~ ;]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every distribution's wheel and sdist, built by ``make dist`` as a release would be."""
    need(shutil.which("git") is not None and shutil.which("make") is not None, "git or make is not installed")
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(["make", "--no-print-directory", "dist", f"DIST={out}"], cwd=REPO,
                           capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return out


def _one(dist: Path, pattern: str) -> Path:
    [found] = dist.glob(pattern)
    return found


@pytest.fixture
def user_folder(tmp_path: Path) -> Path:
    """An empty project folder with a ``server.py`` and a ``server/`` package of its own, each of
    which fails loudly if anything of ours imports it."""
    folder = tmp_path / "project"
    (folder / "server").mkdir(parents=True)
    trap = "raise SystemExit('the project\\'s own server module was imported')\n"
    (folder / "server.py").write_text(trap)
    (folder / "server" / "__init__.py").write_text(trap)
    return folder


def _clean_env(folder: Path) -> dict[str, str]:
    """This process's environment without taskwire's settings or a path back to the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OH_", "OTEL_", "PYTHON", "VIRTUAL_ENV"))}
    return {**env, "HOME": str(folder), "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}


def _venv(root: Path, *install: str, find_links: Path) -> Path:
    """A fresh venv at ``root`` with ``install`` in it (sibling distributions found in
    ``find_links``, the rest from pip's index and cache); its ``bin`` folder."""
    venv.EnvBuilder(with_pip=True).create(root)
    bin_dir = root / "bin"
    env = {**_clean_env(root), "HOME": os.environ.get("HOME", str(root))}  # pip's cache
    done = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q",
         "--find-links", str(find_links), *install],
        capture_output=True, text=True, env=env, timeout=INSTALL_TIMEOUT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return bin_dir


@pytest.fixture(params=["wheel", "sdist"])
def installed(request: pytest.FixtureRequest, dist: Path, tmp_path: Path) -> Iterator[Path]:
    """A fresh venv with the server's artifact installed; yields its ``bin`` folder."""
    yield _venv(tmp_path / "venv", str(_one(dist, "taskwire-*.whl" if request.param == "wheel" else "taskwire-*.tar.gz")),
                find_links=dist)


def _start(command: list[str], folder: Path, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(command, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT)


@contextlib.asynccontextmanager
async def _serving(bin_dir: Path, folder: Path, log: Path, env: dict[str, str]) -> AsyncIterator[str]:
    """``taskwire serve`` from ``bin_dir`` in ``folder`` (forwarding on), answering; its URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = _start([str(bin_dir / "taskwire"), "serve", "--port", str(port)], folder, log,
                    {**env, "OH_FORWARD_SUBAGENT_EVENTS": "true"})
    try:
        await wait_until(lambda: _answers(f"{url}/alive", server, log), timeout=120, what="the installed server")
        yield url
    finally:
        _stop(server)


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


async def test_an_installed_package_serves_the_viewer_runs_the_demo_and_starts_the_mock_llm_in_a_project_of_its_own(
    installed: Path, user_folder: Path, tmp_path: Path
) -> None:
    folder = user_folder
    env = _clean_env(tmp_path)
    probe = ("import importlib.util, taskwire; print(taskwire.__file__); "
             "print(importlib.util.find_spec('server').origin)")
    where, theirs = subprocess.run([str(installed / "python"), "-c", probe],
                                   cwd=folder, env=env, capture_output=True, text=True, check=True).stdout.splitlines()
    assert str(REPO) not in where and str(installed.parent) in where  # the installed copy, not the checkout
    assert theirs == str(folder / "server" / "__init__.py")  # `server` is the project's, nothing of ours
    version = subprocess.run([str(installed / "python"), "-m", "taskwire", "--version"], cwd=folder, env=env,
                             capture_output=True, text=True, check=True).stdout
    assert version.strip() == "taskwire 0.1.0"

    serve_log = tmp_path / "serve.log"
    async with _serving(installed, folder, serve_log, env) as url:
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


CLOSURE = """
import json, re, sys
from importlib import metadata

def name(text): return re.split(r"[\\[<>=!~ ;(]", text, maxsplit=1)[0].strip().lower().replace("_", "-")
installed = {name(d.metadata["Name"]): d for d in metadata.distributions()}
wanted, todo = set(), ["taskwire-client"]
while todo:
    current = todo.pop()
    if current in wanted or current not in installed:
        continue
    wanted.add(current)
    for requirement in installed[current].requires or []:
        if "extra ==" not in requirement:
            todo.append(name(requirement))
print(json.dumps({"installed": sorted(installed), "needed": sorted(wanted)}))
"""


async def test_the_client_alone_follows_a_live_tree_and_installs_nothing_of_the_server(
    dist: Path, user_folder: Path, tmp_path: Path
) -> None:
    client = _venv(tmp_path / "client-venv", str(_one(dist, "taskwire_client-*.whl")), find_links=dist)
    env = _clean_env(tmp_path)
    packages = json.loads(subprocess.run([str(client / "python"), "-c", CLOSURE], cwd=tmp_path, env=env,
                                         capture_output=True, text=True, check=True).stdout)
    import tomllib
    server_deps = _names(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"])
    client_deps = _names(tomllib.loads((REPO / "taskwire-client/pyproject.toml").read_text())["project"]["dependencies"])
    assert "taskwire" not in packages["installed"]
    assert not (set(packages["installed"]) & ((server_deps - client_deps - {"taskwire-client"}) | set(SERVER_ONLY)))
    # Everything in the venv is the client or what it asks for (pip and its build tools aside).
    assert set(packages["installed"]) - set(packages["needed"]) <= {"pip", "setuptools", "wheel"}

    server_bin = _venv(tmp_path / "server-venv", str(_one(dist, "taskwire-*.whl")), find_links=dist)
    serve_log = tmp_path / "serve.log"
    async with _serving(server_bin, user_folder, serve_log, env) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            [scenario] = [s for s in (await http.get("/api/demo")).json()["scenarios"] if s["name"] == "two_subagents"]
            created = await http.post("/api/conversations", json=scenario["request"])
        assert created.status_code == 201, created.text
        conversation = created.json()["id"]
        watch = subprocess.run([str(client / "python"), "-m", "taskwire_client", "watch", conversation, "--url", url,
                                "--timeout", "300"], cwd=user_folder, env=env, capture_output=True, text=True, timeout=360)
        assert watch.returncode == 0, watch.stdout + watch.stderr + serve_log.read_text(errors="replace")[-3000:]
        lines = watch.stdout.rstrip().splitlines()
        assert lines[0].startswith(f"conversation {conversation}  finished") and lines[-1] == "run ended: finished"
        for name in ("a", "b"):  # each sub-agent's card inside its task call, its command inside the card
            card = next(line for line in lines if "◆ general-purpose" in line and f"subagent-{name}" in line)
            echo = next(line for line in lines if f"echo subagent-{name}  → subagent-{name}" in line)
            assert lines.index(card) < lines.index(echo) and echo.index("✓") > card.index("◆")
        # Pointed at something that is not taskwire, it says so and exits 2.
        refused = subprocess.run([str(client / "python"), "-m", "taskwire_client", "watch", conversation, "--url",
                                  f"{url}/static"], cwd=user_folder, env=env, capture_output=True, text=True, timeout=60)
        assert refused.returncode == 2 and "not a taskwire server" in refused.stdout, refused.stdout + refused.stderr


def test_each_distribution_carries_exactly_its_own_files(dist: Path) -> None:
    import tarfile
    import zipfile

    server = zipfile.ZipFile(_one(dist, "taskwire-*.whl")).namelist()
    assert {name.split("/")[0] for name in server} == {"taskwire", "taskwire-0.1.0.dist-info"}
    assert "taskwire/bundled/config/taskwire.toml" in server and "taskwire/static/app.js" in server
    assert any(n.startswith("taskwire/bundled/config/demo/") for n in server)
    assert any(n.startswith("taskwire/bundled/plugins/taskwire-review/agents/") for n in server)
    assert not [n for n in server if "openhands-agent-server" in n or "taskwire_openhands" in n
                or n.startswith(("taskwire/tests", "taskwire/bench", "taskwire/taskwire_client"))]
    client = zipfile.ZipFile(_one(dist, "taskwire_client-*.whl")).namelist()
    assert {name.split("/")[0] for name in client} == {"taskwire_client", "taskwire_client-0.1.0.dist-info"}
    assert "taskwire_client/py.typed" in client
    sdist = tarfile.open(_one(dist, "taskwire-*.tar.gz")).getnames()
    assert not [n for n in sdist if (n + "/").split("/")[1] in {"tests", "bench", "taskwire-client"} or "openhands-agent-server" in n]
    # The agent-server plugin: its package only, pinned to the OpenHands release it was tested with.
    wheel = zipfile.ZipFile(_one(dist, "taskwire_openhands-*.whl"))
    plugin = wheel.namelist()
    assert {name.split("/")[0] for name in plugin} == {"taskwire_openhands", "taskwire_openhands-0.1.0.dist-info"}
    assert {"taskwire_openhands/__init__.py", "taskwire_openhands/stamping.py", "taskwire_openhands/py.typed"} <= set(plugin)
    metadata = wheel.read("taskwire_openhands-0.1.0.dist-info/METADATA").decode()
    assert "Requires-Python: >=3.12" in metadata
    for pin in ("openhands-agent-server==1.58.2", "openhands-sdk==1.58.2", "openhands-tools==1.58.2"):
        assert f"Requires-Dist: {pin}" in metadata
    plugin_sdist = tarfile.open(_one(dist, "taskwire_openhands-*.tar.gz")).getnames()
    assert {(n + "/").split("/")[1] for n in plugin_sdist} - {""} <= {
        "PKG-INFO", "README.md", "pyproject.toml", "setup.cfg", "taskwire_openhands", "taskwire_openhands.egg-info"}


def test_the_plugin_wheel_loads_into_the_openhands_interpreter_from_its_own_copy(dist: Path, tmp_path: Path) -> None:
    """The wheel alone (its dependencies are the OpenHands venv's, the versions it pins) imports
    from where it was installed and finds what it relies on in OpenHands where it expects it."""
    python = need_openhands()
    target = tmp_path / "plugin"
    done = subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-deps",
                           "--target", str(target), str(_one(dist, "taskwire_openhands-*.whl"))],
                          capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
    assert done.returncode == 0, done.stdout + done.stderr
    probe = ("import json, taskwire_openhands, taskwire_openhands.stamping as s\n"
             "from taskwire_openhands.contract import contract_problems, version_problems\n"
             "print(json.dumps([taskwire_openhands.__file__, version_problems(), contract_problems()]))")
    env = {**_clean_env(tmp_path), "PYTHONPATH": str(target), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    found = subprocess.run([python, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert found.returncode == 0, found.stderr[-3000:]
    where, versions, contract = json.loads(found.stdout.strip().splitlines()[-1])
    assert where == str(target / "taskwire_openhands" / "__init__.py")
    assert versions == [] and contract == []
