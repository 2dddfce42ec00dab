"""A peer's own Python 3.12 venv, set up from its lock file; a clear skip when there is no 3.12.

``openhands-agent-server`` 1.58.2 needs Python 3.12, and the LangGraph peer is pinned on it too.
``python3.12`` on ``PATH`` may be a pyenv shim that fails unless that version is selected, so
each candidate is run once and kept only if it answers as 3.12: ``$PEER_PYTHON``, then
``python3.12`` on ``PATH``, then pyenv's own installs (``~/.pyenv/versions/3.12*/bin/python3.12``, newest first).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENV = HERE / ".venv-openhands"
LOCK = HERE.parents[1] / "plugins/openhands-agent-server/requirements-lock.txt"
"""The one OpenHands lock (``make openhands`` installs it too)."""
OPENHANDS = "the OpenHands agent-server 1.58.2"


class Skip(Exception):
    """The peer cannot run on this machine; the message says why."""


def _is_312(candidate: str) -> bool:
    try:
        answer = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 12))"],
                                capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return answer.returncode == 0 and answer.stdout.strip() == "True"


def _version_key(path: Path) -> tuple[int, ...]:
    tail = path.parents[1].name.removeprefix("3.12")
    return tuple(int(p) for p in tail.strip(".").split(".") if p.isdigit())


def candidates(home: Path | None = None, env: dict[str, str] | None = None) -> list[str]:
    """Where a Python 3.12 may be, in the order they are tried."""
    env = os.environ if env is None else env
    found = []
    if env.get("PEER_PYTHON"):
        found.append(env["PEER_PYTHON"])
    on_path = shutil.which("python3.12", path=env.get("PATH"))
    if on_path:
        found.append(on_path)
    pyenv = (home or Path.home()) / ".pyenv" / "versions"
    found.extend(str(p) for p in sorted(pyenv.glob("3.12*/bin/python3.12"), key=_version_key, reverse=True))
    return found


def find_python312(home: Path | None = None, env: dict[str, str] | None = None, peer: str = OPENHANDS) -> str:
    """A Python 3.12 that runs, or ``Skip`` naming ``peer``."""
    tried = candidates(home, env)
    for candidate in tried:
        if _is_312(candidate):
            return candidate
    where = ", ".join(tried) if tried else "none found"
    raise Skip(f"skipped: {peer} needs Python 3.12, and no working python3.12 "
               f"was found (tried: {where}; set PEER_PYTHON=/path/to/python3.12)")


def peer_python(venv: Path = VENV, lock: Path = LOCK, peer: str = OPENHANDS) -> Path:
    """The venv's interpreter, the venv created and installed from ``lock`` if it is not yet."""
    venv = venv.absolute()  # the servers run from other folders
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    if stamp.exists() and stamp.stat().st_mtime >= lock.stat().st_mtime and python.exists():
        return python
    base = find_python312(peer=peer)
    if not python.exists():
        subprocess.run([base, "-m", "venv", str(venv)], check=True)
    log = venv / "install.log"
    print(f"installing the peer into {venv} from {lock.name} (a few minutes)...", flush=True)
    with log.open("w") as out:
        done = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-r", str(lock)],
                              stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise RuntimeError(f"installing the peer failed; the installer's log is {log}:\n" + log.read_text()[-3000:])
    stamp.touch()
    return python
