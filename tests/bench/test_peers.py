"""The peer benchmark's own pieces (``bench/peers/``), without installing the peer.

The workload both servers get, taskwire's side of it written through the real store, where a
Python 3.12 is looked for, and the skip a user sees without one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PEERS = Path(__file__).resolve().parents[2] / "bench" / "peers"
sys.path.insert(0, str(PEERS))

import peer_setup  # noqa: E402
import taskwire_events  # noqa: E402
from workload import MESSAGE_EVERY, RARE_WORD, item  # noqa: E402

from taskwire.store import EventQuery  # noqa: E402
from taskwire.store.sqlite import SQLiteStore  # noqa: E402


def test_the_workload_is_one_user_message_in_a_hundred_then_calls_and_their_outputs() -> None:
    items = [item(i) for i in range(3 * MESSAGE_EVERY)]
    users = [x for x in items if x.kind == "message"]
    assert len(users) == 3 and all(RARE_WORD in x.text for x in users)
    assert not [x for x in items if x.kind != "message" and RARE_WORD in x.text + x.thought]
    calls = {x.call_id: x for x in items if x.kind == "action"}
    outputs = [x for x in items if x.kind == "observation"]
    assert len(outputs) == len(calls) == 3 * 49
    for output in outputs:  # each output right after its call
        assert items[output.index - 1] is calls[output.call_id]


async def test_taskwire_side_stores_the_workload_in_order(tmp_path: Path) -> None:
    count = 2 * MESSAGE_EVERY + 10
    conversation = await taskwire_events.load(tmp_path / "log.db", count)
    store = SQLiteStore(f"sqlite:///{tmp_path / 'log.db'}")
    await store.open()
    try:
        assert await store.count(EventQuery(root_id=conversation)) == count
        assert await store.count(EventQuery(root_id=conversation, kinds=["ObservationEvent"])) == sum(
            item(i).kind == "observation" for i in range(count))
        found = await store.search(EventQuery(root_id=conversation, body=RARE_WORD), limit=100)
        assert [record.seq for record in found.items] == [1, MESSAGE_EVERY + 1, 2 * MESSAGE_EVERY + 1]
    finally:
        await store.close()


def _shim(folder: Path, name: str, script: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return path


def test_a_pyenv_shim_that_fails_is_passed_over_for_pyenvs_own_newest_312(tmp_path: Path) -> None:
    shim = _shim(tmp_path / "shims", "python3.12", 'echo "pyenv: python3.12: command not found" >&2; exit 127')
    for version in ("3.12.1", "3.12.10"):
        _shim(tmp_path / ".pyenv" / "versions" / version / "bin", "python3.12", f'exec "{sys.executable}" "$@"')
    env = {"PATH": str(shim.parent)}
    found = peer_setup.candidates(home=tmp_path, env=env)
    assert found[0] == str(shim)
    assert found[1:] == [str(tmp_path / ".pyenv/versions" / v / "bin/python3.12") for v in ("3.12.10", "3.12.1")]
    # The stand-ins run this interpreter, which is not 3.12 (taskwire's own runs on 3.11+).
    if sys.version_info[:2] != (3, 12):
        with pytest.raises(peer_setup.Skip, match="no working python3.12 was found"):
            peer_setup.find_python312(home=tmp_path, env=env)


def test_without_python_312_the_bench_says_it_skips_and_exits_0(tmp_path: Path) -> None:
    shim = _shim(tmp_path / "shims", "python3.12", "exit 127")
    env = {**os.environ, "HOME": str(tmp_path), "PATH": f"{shim.parent}:/usr/bin:/bin"}
    env.pop("PEER_PYTHON", None)
    done = subprocess.run([sys.executable, str(PEERS / "openhands.py"), "--events", "10", "--venv", str(tmp_path / "venv")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "skipped: the OpenHands agent-server 1.58.2 needs Python 3.12" in done.stdout
    assert str(shim) in done.stdout
    assert not (tmp_path / "venv").exists()
