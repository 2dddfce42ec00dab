"""A large ``claude_sdk`` transcript: the recorded two-sub-agent session padded with ``status``
messages (which the dispatcher passes over) of 32 KiB each, as a session that read big files is
large by its tool results: long strings in a few thousand messages."""

from __future__ import annotations

import json
from pathlib import Path

RECORDING = Path(__file__).resolve().parent / "two_subagents.sdk.jsonl"
PADDING = 32_768


def padded_transcript(path: Path, mib: float) -> int:
    """Write the recording padded to about ``mib`` MiB at ``path``; returns its line count."""
    lines = RECORDING.read_text().splitlines()
    status = next(json.loads(line) for line in lines if '"subtype": "status"' in line)
    status["raw"]["data"]["padding"] = "x" * PADDING
    pad = json.dumps(status)
    count = int(mib * 2**20 / (len(pad) + 1))
    with path.open("w") as out:
        out.write(lines[0] + "\n")
        out.write((pad + "\n") * count)
        out.write("\n".join(lines[1:]) + "\n")
    return len(lines) + count
