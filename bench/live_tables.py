"""``bench/live.py``'s tables: the runs' figures and the probe's, as rich tables."""

from __future__ import annotations

from typing import Any

from rich.table import Table


def table_of(rows: list[dict[str, Any]], title: str) -> Table:
    """One row a run: what its users waited for, and what the server spent."""
    faults = any(r.get("faults") for r in rows)
    table = Table(title=title)
    columns = ["N", "model s", *(["429 share", "retries", "wall ms", "server CPU s"] if faults else []), "finished",
               "POST→201 p50 / p99 ms", "→ first frame p50", "→ first sub-agent event p50 / p99",
               "→ run end p50 (model floor)", "CPU ms / model call", "CPU ms / event", "RSS end / peak MB", "load 1 / 5 min"]
    for column in columns:
        table.add_column(column, justify="right")
    for r in rows:
        extra = [f"{r['faults']:.0%}", f"{r['retries']:,.0f}", f"{r['end_max']:,.0f}", f"{r['cpu_s']:.1f}"] if faults else []
        table.add_row(
            str(r["trees"]), f"{r['delay']:g}", *extra, f"{r['ok']}/{r['trees']}",
            f"{r['created_p50']:,.0f} / {r['created_p99']:,.0f}",
            f"{r['frame_p50']:,.0f}", f"{r['sub_p50']:,.0f} / {r['sub_p99']:,.0f}", f"{r['end_p50']:,.0f} ({r['floor']:,.0f})",
            f"{r['cpu_per_call']:.2f}" + (f" (model {r['model_cpu_per_call']:.2f})" if r.get("model_cpu_per_call") else ""),
            f"{r['cpu_per_event']:.3f}", f"{r['rss_end']:.0f} / {r['rss_peak']:.0f}",
            f"{r['load'][0]:.1f} / {r['load'][1]:.1f}",
        )
    return table


def probe_table(rows: list[dict[str, Any]], probes: Any) -> Table:
    """The API's other requests during each run, beside the same requests on the idle server."""
    table = Table(title="the API's other requests meanwhile, one at a time every 0.1 s (idle: the same server before the trees)")
    for column in ("N", "model s", *(f"{name} p50 / p99 ms (idle p50)" for name in probes)):
        table.add_column(column, justify="right")
    for r in rows:
        table.add_row(str(r["trees"]), f"{r['delay']:g}", *(f"{a:,.1f} / {b:,.1f} ({c:,.1f})" for a, b, c in r["probe"].values()))
    return table
