"""The event-stream core, fed lists of records: ordering, resume, gaps, overflow, deltas."""

from __future__ import annotations

import dataclasses

from taskwire.stream import CloseCode, EventStream
from tests.stream.checks import assert_gapless, frame_seqs, parse
from tests.stream.treelog import ROOT, TreeLog, feed_live, read_store


def connect(log: TreeLog, **params: object) -> EventStream:
    """A stream opened now: its snapshot is the log as it stands, its tree the one known now."""
    params.setdefault("forwarding", log.forwarding)
    return EventStream(ROOT, snapshot_seq=log._seq, tree=log.tree(), **params)  # type: ignore[arg-type]


def test_replay_then_live_with_overlap_sends_each_event_once() -> None:
    log = TreeLog()
    for i in range(25):
        log.say(f"before {i}")
    stream = connect(log)
    # Events produced while the replay is read: in the store *and* queued on the bus.
    mark = len(log.published)
    for i in range(5):
        log.say(f"during {i}")
    read_store(stream, log, page=7)
    feed_live(stream, log, log.live_since(mark - 3))  # the bus also repeats a few old ones
    for i in range(5):
        log.say(f"after {i}")
    feed_live(stream, log, log.live_since(mark + 5))
    assert_gapless(stream.frames_to_send(), log.seqs())


def test_live_records_handed_over_during_replay_wait_for_it() -> None:
    log = TreeLog()
    for i in range(10):
        log.say(f"old {i}")
    stream = connect(log)
    first = stream.store_query()
    assert first is not None and first.after_seq == 0
    log.say("new while reading")
    stream.receive_live(log.published[-1])
    assert stream.frames_to_send() == []  # it waits behind the replay
    read_store(stream, log, page=4)
    assert_gapless(stream.frames_to_send(), log.seqs())


def test_replay_that_reads_to_the_end_asks_no_gap_fill_for_unseen_streams() -> None:
    log = TreeLog(forwarding=False)
    log.say("hello")
    _, sub = log.spawn()
    for i in range(5):
        log.say(f"sub work {i}", sub)  # stored, never published: forwarding is off
    stream = connect(log)
    read_store(stream, log)
    log.say("root again")
    asked = feed_live(stream, log, log.live_since(len(log.published) - 1))
    assert asked == []
    assert_gapless(stream.frames_to_send(), log.seqs({ROOT}))


def test_gap_in_live_records_is_filled_from_store() -> None:
    log = TreeLog()
    log.say("start")
    stream = connect(log)
    read_store(stream, log)
    mark = len(log.published)
    for i in range(30):
        log.say(f"live {i}")
    live = log.live_since(mark)
    lost = {5, 6, 7, 20}
    kept = [r for i, r in enumerate(live) if i not in lost]
    asked = feed_live(stream, log, kept, page=2)
    assert stream.gap() is None
    assert_gapless(stream.frames_to_send(), log.seqs())
    assert [(q.after_seq, q.until_seq) for q in asked][:2] == [(live[4].seq, live[7].seq), (live[6].seq, live[7].seq)]


def test_record_without_prev_seq_is_checked_against_the_store() -> None:
    log = TreeLog()
    log.say("start")
    stream = connect(log)
    read_store(stream, log)
    for i in range(3):
        log.say(f"live {i}")
    last = dataclasses.replace(log.published[-1], prev_seq=None)
    asked = feed_live(stream, log, [last])
    assert [(q.after_seq, q.until_seq) for q in asked] == [(1, 3)]
    assert_gapless(stream.frames_to_send(), log.seqs())


def test_resume_sends_only_events_after_after_seq() -> None:
    log = TreeLog()
    for i in range(20):
        log.say(f"m {i}")
    stream = connect(log, after_seq=12)
    read_store(stream, log)
    log.say("next")
    feed_live(stream, log, log.live_since(len(log.published) - 1))
    assert_gapless(stream.frames_to_send(), log.seqs(after=12))


def test_forwarding_off_shows_exactly_the_root_stream() -> None:
    log = TreeLog(forwarding=False)
    log.say("hi")
    call, sub = log.spawn()
    log.say("working", sub)
    log.delta("tok", sub)  # not published either
    stream = connect(log, parent_tool_use_id=None)
    asked = read_store(stream, log)
    assert [q.conversation_ids for q in asked] == [[ROOT]]
    mark = len(log.published)
    log.say("more sub work", sub)
    log.say("root answer")
    feed_live(stream, log, log.live_since(mark))
    frames = parse(stream.frames_to_send())
    assert all("subagent_id" not in e and "parent_tool_use_id" not in e for e in frames)
    assert_gapless(frames, log.seqs({ROOT}))


def test_subagents_none_shows_only_the_root_stream_with_forwarding_on() -> None:
    log = TreeLog(forwarding=True)
    log.say("hi")
    _, sub = log.spawn()
    log.say("sub", sub)
    stream = connect(log, subagents="none")
    assert [q.conversation_ids for q in read_store(stream, log)] == [[ROOT]]
    mark = len(log.published)
    for i in range(10):
        log.say(f"sub {i}", sub)
        log.delta("tok", sub)
    log.say("root")
    log.delta("root tok")
    asked = feed_live(stream, log, log.live_since(mark))
    assert asked == []  # the sub-agent records keep the chain: no store reads
    frames = stream.frames_to_send()
    assert_gapless(frames, log.seqs({ROOT}))
    assert [e.get("content") for e in parse(frames)][-2:] == ["root", "root tok"]


def test_subtree_of_a_call_includes_every_level_below_it() -> None:
    log = TreeLog()
    call_a, a = log.spawn()
    _, b = log.spawn(a)
    _, c = log.spawn(b)  # depth 3 below the root
    call_other, other = log.spawn()
    for sub in (a, b, c, other):
        log.say(f"work of {sub}", sub)
    log.say("root")
    stream = connect(log, parent_tool_use_id=call_a)
    queries = read_store(stream, log)
    assert sorted(queries[0].conversation_ids or []) == sorted([a, b, c])
    assert_gapless(stream.frames_to_send(), log.seqs({a, b, c}))

    mark = len(log.published)
    _, d = log.spawn(c)  # depth 4 appears live
    log.say("deep", d)
    log.say("elsewhere", other)
    log.say("c again", c)
    feed_live(stream, log, log.live_since(mark))
    assert_gapless(stream.frames_to_send(), log.seqs({a, b, c, d}, after=log.published[mark - 1].seq or 0))


def test_subagent_spawned_by_the_call_after_connect_joins_the_view() -> None:
    log = TreeLog()
    log.say("root")
    stream = connect(log, parent_tool_use_id="task-call-1")  # the call has not happened yet
    # No sub-agent of that call is known: nothing to read up to the snapshot, the rest whole.
    assert [(q.conversation_ids, q.after_seq) for q in read_store(stream, log)] == [(None, log._seq)]
    mark = len(log.published)
    call, sub = log.spawn()
    assert call == "task-call-1"
    log.say("child says", sub)
    log.delta("child tok", sub)
    log.say("root says")
    feed_live(stream, log, log.live_since(mark))
    frames = parse(stream.frames_to_send())
    assert [e["kind"] for e in frames] == ["SubagentStartedEvent", "MessageEvent", "StreamingDeltaEvent"]
    assert {e["subagent_id"] for e in frames} == {sub}


def test_subagent_started_during_replay_is_not_missed() -> None:
    # The tree snapshot is taken before the log's end: sub-agents that start after it are
    # learnt from the store in seq order, and none of their records is passed over.
    log = TreeLog()
    call_a, a = log.spawn()
    log.say("a1", a)
    snapshot, tree = log._seq, log.tree()
    _, b = log.spawn(a)  # unknown to the snapshot
    for i in range(6):
        log.say(f"b{i}", b)
        log.say(f"a{i}", a)
        log.say(f"root{i}")
    stream = EventStream(ROOT, snapshot_seq=snapshot, tree=tree, forwarding=True, parent_tool_use_id=call_a)
    queries = read_store(stream, log, page=3)
    assert queries[0].conversation_ids == [a] and queries[0].until_seq == snapshot
    assert queries[-1].conversation_ids is None  # past the snapshot: the whole tree, filtered here
    assert_gapless(stream.frames_to_send(), log.seqs({a, b}))


def test_socket_on_a_subagent_sees_only_its_subtree() -> None:
    log = TreeLog()
    _, a = log.spawn()
    _, b = log.spawn(a)
    _, sibling = log.spawn()
    for sub in (a, b, sibling):
        log.say(f"{sub} works", sub)
    log.say("root")
    stream = EventStream(
        ROOT, snapshot_seq=log._seq, tree=log.tree(), forwarding=True, scope_subagent_id=a
    )
    read_store(stream, log)
    mark = len(log.published)
    _, c = log.spawn(b)
    log.say("c works", c)
    log.say("sibling again", sibling)
    feed_live(stream, log, log.live_since(mark))
    assert_gapless(stream.frames_to_send(), log.seqs({a, b, c}))

    own = EventStream(ROOT, snapshot_seq=log._seq, tree=log.tree(), forwarding=True, scope_subagent_id=a, subagents="none")
    read_store(own, log)
    assert_gapless(own.frames_to_send(), log.seqs({a}))


def test_a_subagent_stream_the_bus_does_not_carry_is_fed_by_polling_the_store() -> None:
    log = TreeLog(forwarding=False)
    _, sub = log.spawn()
    log.say("before", sub)
    assert not EventStream.fed_by_bus(forwarding=False, scope_subagent_id=sub)
    assert EventStream.fed_by_bus(forwarding=False, scope_subagent_id=None)
    assert EventStream.fed_by_bus(forwarding=True, scope_subagent_id=sub)
    stream = EventStream(ROOT, snapshot_seq=log._seq, tree=log.tree(), forwarding=False, scope_subagent_id=sub)
    read_store(stream, log)
    for n in range(3):
        log.say(f"sub {n}", sub)
        log.say(f"root {n}")
        stream.poll()
        stream.poll()  # a poll during a read changes nothing
        read_store(stream, log, page=2)
    assert stream.store_query() is None
    assert_gapless(stream.frames_to_send(), log.seqs({sub}))


def test_parent_tool_use_id_with_forwarding_off_sees_nothing() -> None:
    log = TreeLog(forwarding=False)
    call, sub = log.spawn()
    log.say("sub", sub)
    stream = connect(log, parent_tool_use_id=call)
    assert read_store(stream, log) == []
    log.say("root")
    assert feed_live(stream, log, log.live_since(len(log.published) - 1)) == []
    assert stream.frames_to_send() == []


def test_schema_1_gets_failed_for_cancelled_tool_calls_and_identical_bytes_otherwise() -> None:
    log = TreeLog()
    records = [
        log.tool_call("cancelled"),
        log.tool_call("cancelled", acp=True),
        log.tool_call("failed"),
        log.tool_call("completed", acp=True),
        log.say('quoting "status":"cancelled" in text'),
    ]
    old = connect(log, schema=1)
    read_store(old, log)
    frames = old.frames_to_send()
    assert [parse([f])[0].get("status") for f in frames] == ["failed", "failed", "failed", "completed", None]
    assert frames[0] == records[0].json.replace('"status":"cancelled"', '"status":"failed"')
    assert frames[2:] == [r.json for r in records[2:]]

    new = connect(log, schema=2)
    read_store(new, log)
    assert new.frames_to_send() == [r.json for r in records]


def test_slow_client_is_closed_with_resume_seq() -> None:
    log = TreeLog()
    for i in range(5):
        log.say(f"m {i}")
    stream = connect(log)
    read_store(stream, log)
    sent = stream.frames_to_send()
    delivered = frame_seqs(sent)
    stream.receive_overflow()
    assert stream.close_code() is CloseCode.TOO_SLOW
    assert stream.resume_seq == delivered[-1]
    assert stream.close_reason == f"too slow; resume with after_seq={delivered[-1]}"
    assert stream.store_query() is None

    for i in range(5):
        log.say(f"later {i}")
    resumed = connect(log, after_seq=stream.resume_seq)
    read_store(resumed, log)
    assert_gapless(sent + resumed.frames_to_send(), log.seqs())


def test_client_that_stalls_mid_batch_resumes_after_the_last_frame_it_got() -> None:
    log = TreeLog()
    for i in range(4):
        log.say(f"first {i}")
    stream = connect(log)
    read_store(stream, log)
    first = stream.frames_to_send()  # sent whole
    mark = len(log.published)
    log.delta("typing")
    for i in range(4):
        log.say(f"second {i}")
    feed_live(stream, log, log.live_since(mark))
    batch = stream.frames_to_send()
    stream.receive_stall(3)  # the delta and two messages went out, then the client stopped
    got = first + batch[:3]
    assert stream.close_code() is CloseCode.TOO_SLOW
    assert stream.resume_seq == frame_seqs(got)[-1]
    assert stream.close_reason == f"too slow; resume with after_seq={stream.resume_seq}"
    resumed = connect(log, after_seq=stream.resume_seq)
    read_store(resumed, log)
    assert_gapless(got + resumed.frames_to_send(), log.seqs())


def test_client_that_stalls_before_a_batch_or_after_an_overflow_misses_nothing() -> None:
    log = TreeLog()
    for i in range(3):
        log.say(f"m {i}")
    stream = connect(log)
    read_store(stream, log)
    sent = stream.frames_to_send()
    mark = len(log.published)
    log.say("unsent")
    feed_live(stream, log, log.live_since(mark))
    stream.receive_overflow()  # its last batch still goes out ...
    stream.frames_to_send()
    stream.receive_stall(0)  # ... and stalls: the resume point moves back
    assert stream.resume_seq == frame_seqs(sent)[-1]
    assert stream.close_reason.endswith(f"after_seq={frame_seqs(sent)[-1]}")


def test_resume_seq_skips_past_records_the_view_does_not_see() -> None:
    log = TreeLog()
    log.say("root")
    stream = connect(log, subagents="none")
    read_store(stream, log)
    _, sub = log.spawn()
    mark = len(log.published)
    log.say("sub", sub)
    feed_live(stream, log, log.live_since(mark))
    stream.receive_overflow()
    assert stream.resume_seq == log._seq  # everything it would see up to there was sent


def test_ephemeral_deltas_pass_through_in_order() -> None:
    log = TreeLog()
    log.say("q")
    stream = connect(log)
    read_store(stream, log)
    stream.frames_to_send()
    mark = len(log.published)
    log.delta("Hel")
    log.delta("lo")
    log.say("Hello")
    feed_live(stream, log, log.live_since(mark))
    frames = stream.frames_to_send()
    assert [e["kind"] for e in parse(frames)] == ["StreamingDeltaEvent", "StreamingDeltaEvent", "MessageEvent"]
    assert frames[:2] == [r.json for r in log.published[mark : mark + 2]]


def test_deltas_of_a_message_the_replay_already_sent_are_dropped() -> None:
    log = TreeLog()
    log.say("q")
    stream = connect(log)
    mark = len(log.published)
    log.delta("Hel")
    log.delta("lo")
    log.say("Hello")  # in the store: the replay sends it whole
    log.delta("Bye")
    for record in log.live_since(mark):
        stream.receive_live(record)  # queued on the bus while the replay runs
    read_store(stream, log)
    frames = parse(stream.frames_to_send())
    assert [(e["kind"], e["content"]) for e in frames[-2:]] == [("MessageEvent", "Hello"), ("StreamingDeltaEvent", "Bye")]
    assert [e["content"] for e in frames].count("Hel") == 0


def test_records_beyond_max_pending_are_recovered_from_the_store() -> None:
    log = TreeLog()
    log.say("first")
    stream = connect(log, max_pending=5)
    query = stream.store_query()
    assert query is not None
    page, exhausted = log.answer(query, 10)  # the replay's last page is read ...
    mark = len(log.published)
    for i in range(40):  # ... then a burst is published before the page is handed over
        log.say(f"burst {i}")
    for record in log.live_since(mark):
        stream.receive_live(record)
    stream.receive_stored(page, exhausted=exhausted)
    asked = read_store(stream, log, page=10)
    assert (asked[0].after_seq, asked[0].until_seq) == (1, 36)  # the 35 dropped ones, from the store
    assert_gapless(stream.frames_to_send(), log.seqs())
