"""Assertions that speak the event stream's domain, for frames from the core or a socket."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Iterable


def parse(frames: Iterable[str | dict[str, Any]]) -> list[dict[str, Any]]:
    return [json.loads(f) if isinstance(f, str) else f for f in frames]


def frame_seqs(frames: Iterable[str | dict[str, Any]]) -> list[int]:
    """The ``seq`` of each stored event among ``frames``, in order (ephemeral frames skipped)."""
    return [event["seq"] for event in parse(frames) if "seq" in event]


def assert_gapless(frames: Iterable[str | dict[str, Any]], expected: Iterable[int]) -> None:
    """Every expected ``seq`` exactly once, in increasing order, and nothing else."""
    seqs = frame_seqs(frames)
    duplicates = sorted(s for s, n in Counter(seqs).items() if n > 1)
    assert not duplicates, f"sent twice: {duplicates[:20]}"
    disorder = [(a, b) for a, b in zip(seqs, seqs[1:]) if b <= a]
    assert not disorder, f"out of seq order at {disorder[:5]}"
    wanted = list(expected)
    missing = sorted(set(wanted) - set(seqs))
    extra = sorted(set(seqs) - set(wanted))
    assert not missing, f"never sent: {missing[:20]} ({len(missing)} in all)"
    assert not extra, f"sent but not expected: {extra[:20]} ({len(extra)} in all)"


def streams_of(frames: Iterable[str | dict[str, Any]]) -> set[str | None]:
    """The sub-agents whose events are among ``frames`` (``None``: the root's own events)."""
    return {event.get("subagent_id") for event in parse(frames)}
