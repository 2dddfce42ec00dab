"""Random histories: whatever the bus drops or repeats and however reads and appends
interleave, a subscriber gets exactly its view's stored events, once each, in seq order."""

from __future__ import annotations

import random

import pytest

from taskwire.events import EventRecord
from taskwire.stream import EventStream
from tests.stream.checks import assert_gapless
from tests.stream.treelog import ROOT, TreeLog, read_store


def grow(log: TreeLog, rng: random.Random, subagents: list[str]) -> None:
    """One step of a busy tree: a sub-agent starts, a delta streams, or a stream speaks."""
    roll = rng.random()
    if roll < 0.12:
        _, sub = log.spawn(rng.choice([None, *subagents]))
        subagents.append(sub)
    elif roll < 0.25:
        log.delta("tok", rng.choice([None, *subagents]))
    else:
        log.say("msg", rng.choice([None, *subagents]))


def expected_streams(log: TreeLog, params: dict[str, object]) -> set[str]:
    """The streams the view covers in the final tree, said independently of the core."""
    nodes = {e["subagent_id"]: e for e in log.tree()}

    def lineage(sub: str | None) -> list[str]:
        chain = []
        while sub is not None:
            chain.append(sub)
            sub = nodes[sub]["parent_subagent_id"]
        return chain

    own = params.get("scope_subagent_id") or ROOT
    if params.get("subagents") == "none":
        return {own}  # type: ignore[arg-type]
    inside = [s for s in nodes if own == ROOT or own in lineage(s)]
    call = params.get("parent_tool_use_id")
    if call is None:
        return {own, *inside}  # type: ignore[arg-type]
    return {s for s in inside if any(nodes[x]["parent_tool_use_id"] == call for x in lineage(s))}


@pytest.mark.parametrize("seed", range(60))
def test_random_history_reaches_the_subscriber_gapless(seed: int) -> None:
    rng = random.Random(seed)
    log = TreeLog(forwarding=True)
    subagents: list[str] = []
    for _ in range(rng.randint(0, 40)):
        grow(log, rng, subagents)
    params: dict[str, object] = rng.choice(
        [
            {},
            {"subagents": "none"},
            {"parent_tool_use_id": rng.choice(["task-call-1", "task-call-2", "task-call-5"])},
            {"scope_subagent_id": rng.choice(subagents or ["sub-1"])},
            {"scope_subagent_id": rng.choice(subagents or ["sub-1"]), "parent_tool_use_id": "task-call-3"},
        ]
    )
    after = rng.randint(0, log._seq)
    tree = log.tree()
    if "scope_subagent_id" in params:
        tree = [e for e in tree if e["subagent_id"] != params["scope_subagent_id"]] + [
            e for e in tree if e["subagent_id"] == params["scope_subagent_id"]
        ]
    stream = EventStream(
        ROOT, after_seq=after, snapshot_seq=log._seq, tree=tree, forwarding=True,
        max_pending=rng.choice([3, 50]), **params,  # type: ignore[arg-type]
    )
    bus_position = len(log.published)
    answer: tuple[list[EventRecord], bool] | None = None
    for _ in range(rng.randint(0, 120)):
        action = rng.random()
        if action < 0.4:
            grow(log, rng, subagents)
        elif action < 0.6 and stream.store_query() is not None:
            if answer is None:
                answer = log.answer(stream.store_query(), rng.choice([1, 4, 100]))  # type: ignore[arg-type]
            else:
                stream.receive_stored(answer[0], exhausted=answer[1])
                answer = None
        elif bus_position < len(log.published):
            record = log.published[bus_position]
            bus_position += 1
            if rng.random() < 0.15:
                continue  # the bus lost it
            stream.receive_live(record)
            if rng.random() < 0.1:
                stream.receive_live(record)  # or repeated it
    if answer is not None:
        stream.receive_stored(answer[0], exhausted=answer[1])
    log.say("last word")  # a final record, never lost, shows a lost tail
    for record in log.published[bus_position:]:
        stream.receive_live(record)
        read_store(stream, log, page=5)
    read_store(stream, log, page=5)
    assert_gapless(stream.frames_to_send(), log.seqs(expected_streams(log, params), after=after))
