"""The scale benchmark of ``kind: openhands`` against the real agent-server (``bench/openhands_scale.py``):
a small run produces every figure for both servers. It asserts no timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.services import need_openhands

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_a_small_run_measures_both_servers(tmp_path: Path) -> None:
    need_openhands()
    out = subprocess.run(
        [sys.executable, str(BENCH / "openhands_scale.py"), "--trees", "2", "--subagents", "2", "--steps", "1",
         "--rounds", "2", "--json", str(tmp_path / "figures.json")],
        capture_output=True, text=True, timeout=900, cwd=BENCH.parent,
    )
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    figures = json.loads((tmp_path / "figures.json").read_text())["2"]
    for server in ("taskwire", "agent-server"):
        measured = figures[server]
        # 2 trees x 2 sub-agents x (1 think + finish): every sub-agent's frames reached the sockets.
        assert measured["sub-agent frames"] >= 2 * 2 * 2, (server, measured)
        assert measured["sub-agent events (OpenHands')"] >= 2 * 2 * 2, (server, measured)
        assert measured["memory in total (PSS), peak MB"] > 0, (server, measured)
        assert measured["CPU ms / sub-agent event (OpenHands')"] > 0, (server, measured)
        for figure in ("task frame → first sub-agent frame", "task call → first sub-agent frame", "OpenHands' own spawn"):
            assert measured[f"{figure} p50 ms"] >= 0, (server, figure, measured)
    # Two rounds, one with each server first; the figures are their medians.
    assert len(figures["rounds"]) == 2
