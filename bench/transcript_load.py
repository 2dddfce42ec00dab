"""What starting a ``claude_sdk`` replay of a large transcript costs the other conversations:
the event loop's lag (``taskwire_event_loop_lag_max_seconds`` on ``/metrics``) while it loads.

The recorded two-sub-agent session padded to about ``--mib`` MiB
(``tests/claude_sdk/large_transcript.py``). Per
trial, a fresh in-process server: its lag at rest, then its lag across a replay of the large
transcript (read and parsed in a thread), and, as the ceiling in the same run, the stall the
same read and parse makes when done on the loop (as before: ``load_transcript`` called there).

    .venv/bin/python bench/transcript_load.py [--mib 60] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from common import isolated_settings, taskwire_server
from rich.console import Console
from rich.table import Table

from taskwire.claude_sdk.transcript import load_transcript
from tests.claude_sdk.large_transcript import padded_transcript
from tests.servers import wait_for_status

LAG = "taskwire_event_loop_lag_max_seconds"


async def lag_ms(client) -> float:
    text = (await client.get("/metrics")).text
    return 1000 * float(next(line.split()[1] for line in text.splitlines() if line.startswith(LAG + " ")))


async def trial(transcript: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = isolated_settings(Path(tmp), workspace_roots=[str(transcript.parent)])
        async with taskwire_server(settings) as server:
            await asyncio.sleep(1.0)
            rest = await lag_ms(server.client)
            started = time.perf_counter()
            response = await server.client.post("/api/conversations", json={
                "agent": {"kind": "claude_sdk", "replay": str(transcript)}, "initial_message": "go"})
            assert response.status_code == 201, response.text
            info = await wait_for_status(server.client, response.json()["id"], {"finished", "error"}, timeout=300)
            assert info["status"] == "finished", info
            run_s = time.perf_counter() - started
            off_loop = await lag_ms(server.client)
            started = time.perf_counter()
            load_transcript(transcript, [transcript.parent])  # the old way: on the loop
            parse_s = time.perf_counter() - started
            await asyncio.sleep(0.2)
            on_loop = await lag_ms(server.client)
    return {"rest": rest, "off_loop": off_loop, "on_loop": on_loop, "run_s": run_s, "parse_s": parse_s}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=float, default=60)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        transcript = Path(tmp) / "large.sdk.jsonl"
        lines = padded_transcript(transcript, args.mib)
        size = transcript.stat().st_size / 2**20
        results = [await trial(transcript) for _ in range(args.repeat)]
    table = Table(title=f"claude_sdk replay of a {size:.1f} MiB transcript ({lines} lines), {args.repeat} trials (median)")
    for column in ("loop lag max at rest ms", "across the replay (off the loop) ms",
                   "ceiling: read+parse on the loop ms", "parse s", "replay run s", "load avg"):
        table.add_column(column)
    med = {k: statistics.median(r[k] for r in results) for k in results[0]}
    table.add_row(f"{med['rest']:.1f}", f"{med['off_loop']:.1f}", f"{med['on_loop']:.0f}", f"{med['parse_s']:.2f}",
                  f"{med['run_s']:.2f}", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    Console().print(table)


if __name__ == "__main__":
    asyncio.run(main())
