"""``make bench``: every benchmark, one after the other, with its command line printed first.

Figures only; nothing is asserted. Sizes default to the recorded runs in BENCHMARKS.md; pass
``--quick`` for smaller ones.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent

FULL = [
    ["store.py"],
    ["replay.py", "--events", "1000000"],
    ["delivery.py"],
    ["forwarding.py"],
    ["tracing.py"],
    ["scaleout.py"],
    ["viewer.py"],
    ["acp_load.py", "--events", "100000"],
    ["permissions.py"],
    ["acp_peer_permissions.py"],
    ["many.py"],
    ["steer_price.py"],
]
QUICK = [
    ["store.py", "--sizes", "10000,100000"],
    ["replay.py", "--events", "100000"],
    ["delivery.py", "--events", "10000"],
    ["forwarding.py", "--repeat", "1"],
    ["tracing.py", "--repeat", "1"],
    ["scaleout.py", "--events", "100000"],
    ["viewer.py", "--runs", "1"],
    ["acp_load.py", "--events", "10000"],
    ["permissions.py", "--calls", "50"],
    ["acp_peer_permissions.py", "--calls", "50"],
    ["many.py", "--sizes", "10,100", "--replica-sizes", "100", "--steps", "5"],
    ["steer_price.py", "--calls", "60", "--rounds", "1", "--steers", "10"],
]


def main() -> int:
    plan = QUICK if "--quick" in sys.argv else FULL
    failed = []
    for args in plan:
        if args[0] == "viewer.py" and not shutil.which("chromium"):
            print("\n$ skipping bench/viewer.py: Debian's chromium is not installed (make browser)")
            continue
        print(f"\n$ .venv/bin/python bench/{' '.join(args)}", flush=True)
        if subprocess.run([sys.executable, str(BENCH / args[0]), *args[1:]]).returncode != 0:
            failed.append(args[0])
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
