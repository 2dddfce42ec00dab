"""The soak benchmark's own pieces (``bench/soak.py``): its verdict on samples, and a short run
against the real server and the real ``taskwire mock-llm``. It asserts no timing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import soak  # noqa: E402


def samples(rss: list[float]) -> list[soak.Sample]:
    """One sample every 10 s, ten trees between samples, no error."""
    return [soak.Sample(t=10.0 * n, trees=10 * n, errors=0, loaded=8, rss=value, fds=40, threads=7,
                        model_rss=60.0, model_fds=10, model_threads=1, load=1.0) for n, value in enumerate(rss)]


def test_memory_that_stops_growing_once_warm_is_flat() -> None:
    warming = [80.0 + 4 * n for n in range(10)]  # the first half grows: caches fill
    result = soak.growth(samples(warming + [120.0, 121.0, 120.0, 120.5] * 3))
    assert result["verdict"] == "flat" and result["growth_pct"] < 5, result


def test_memory_growing_through_the_last_half_is_growing_and_costs_so_much_a_tree() -> None:
    result = soak.growth(samples([100.0 + n for n in range(40)]))  # 1 MB a sample: 100 KB a tree
    assert result["verdict"] == "growing", result
    assert 95 < result["kb_per_tree"] < 105, result


def test_a_failed_tree_is_never_flat() -> None:
    run = samples([100.0] * 20)
    run[-1].errors = 1
    assert soak.growth(run)["verdict"] == "errors"


def test_too_few_samples_say_so() -> None:
    assert soak.growth(samples([100.0] * 3))["verdict"] == "too short"


def test_a_short_soak_runs_trees_over_http_and_reports(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(BENCH / "soak.py"), "--minutes", "0.4", "--trees", "2", "--k", "2", "--m", "2",
         "--sample", "2", "--unload", "60", "--samples", str(tmp_path / "samples.jsonl"), "--keep", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    summary = [line for line in out.stdout.splitlines() if line.startswith("trees done")]
    assert summary, out.stdout[-3000:]
    done, errors = (int(part.split()[-1]) for part in summary[0].split(",")[:2])
    assert done > 0 and errors == 0, out.stdout[-3000:]
    assert "verdict: " in out.stdout and "OH_IDLE_UNLOAD_SECONDS=60" in out.stdout
    assert (tmp_path / "samples.jsonl").read_text().count("\n") >= 6
