"""Appending: seq assignment, group commit, ordering, durability, what is refused."""

from __future__ import annotations

import asyncio

import pytest

from taskwire.events import MessageEvent, StreamingDeltaEvent, parse_event
from taskwire.store import ConversationRecord, Store
from taskwire.store.base import EventQuery


async def test_seq_is_strictly_increasing_per_tree_and_independent_across_trees(store: Store) -> None:
    seqs: dict[str, list[int]] = {"a": [], "b": []}
    for turn in range(5):
        for root in ("a", "b"):
            record = await store.append(root, root, MessageEvent(content=f"{root}{turn}"))
            seqs[root].append(record.seq)
    assert seqs == {"a": [1, 2, 3, 4, 5], "b": [1, 2, 3, 4, 5]}


async def test_sub_agent_events_share_the_tree_counter(store: Store) -> None:
    first = await store.append("root", "root", MessageEvent(content="root"))
    second = await store.append("child", "root", MessageEvent(content="child"))
    third = await store.append("root", "root", MessageEvent(content="root again"))
    assert [first.seq, second.seq, third.seq] == [1, 2, 3]
    assert second.conversation_id == "child" and second.root_id == "root"


async def test_append_sets_event_seq_and_stores_the_json_it_returns(store: Store) -> None:
    event = MessageEvent(role="user", source="user", content='quotes " and ünïcode')
    record = await store.append("root", "root", event)
    assert event.seq == record.seq == 1
    assert record.json == event.to_json()
    assert parse_event(record.json).seq == 1
    stored = await store.get(event.id)
    assert stored == record
    assert stored.json.encode() == record.json.encode()
    page = await store.search(EventQuery(root_id="root"))
    assert page.items[0].json == record.json


async def test_concurrent_appends_get_unique_increasing_seqs_in_call_order(store: Store) -> None:
    roots = ["t1", "t2", "t3"]
    calls = [(roots[n % 3], MessageEvent(content=str(n))) for n in range(600)]
    records = await asyncio.gather(*(store.append(root, root, event) for root, event in calls))
    for root in roots:
        seqs = [record.seq for (r, _), record in zip(calls, records) if r == root]
        assert seqs == list(range(1, 201))
    assert all(event.seq == record.seq for (_, event), record in zip(calls, records))


async def test_concurrent_appends_resume_in_seq_order(store: Store) -> None:
    # A caller that publishes right after its await must publish in seq order.
    published: dict[str, list[int]] = {"t1": [], "t2": []}

    async def append_then_publish(root: str, n: int) -> None:
        record = await store.append(root, root, MessageEvent(content=str(n)))
        published[root].append(record.seq)

    tasks = [asyncio.create_task(append_then_publish(("t1", "t2")[n % 2], n)) for n in range(300)]
    await asyncio.sleep(0)  # let the writer take a first batch while more arrive
    tasks += [asyncio.create_task(append_then_publish(("t1", "t2")[n % 2], n)) for n in range(300)]
    await asyncio.gather(*tasks)
    for seqs in published.values():
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs) == 300


async def test_append_is_durable_when_it_returns(store: Store, reopen) -> None:
    records = await asyncio.gather(*(store.append("r", "r", MessageEvent(content=str(n))) for n in range(50)))
    other = await reopen()  # a second store over the same database sees every record
    assert await other.get_many([r.id for r in records]) == list(records)


async def test_ephemeral_events_are_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="ephemeral"):
        await store.append("r", "r", StreamingDeltaEvent(content="tok"))
    assert await store.last_seq("r") == 0


async def test_a_duplicate_event_id_fails_alone(store: Store) -> None:
    event = MessageEvent(content="once")
    await store.append("r", "r", event)
    again = MessageEvent(id=event.id, content="twice")
    others = [MessageEvent(content=str(n)) for n in range(5)]
    results = await asyncio.gather(
        *(store.append("r", "r", e) for e in [others[0], again, *others[1:]]), return_exceptions=True
    )
    assert isinstance(results[1], ValueError)
    stored = [r for r in results if not isinstance(r, BaseException)]
    assert [r.seq for r in stored] == [2, 3, 4, 5, 6]
    assert (await store.get(event.id)).json == event.to_json()
    assert await store.last_seq("r") == 6


async def test_last_seq_is_zero_for_an_empty_tree_and_the_highest_otherwise(store: Store) -> None:
    assert await store.last_seq("r") == 0
    for n in range(3):
        await store.append("c", "r", MessageEvent(content=str(n)))
    assert await store.last_seq("r") == 3
    assert await store.last_seq("c") == 0


async def test_reopened_store_keeps_events_and_continues_seq(store: Store, reopen) -> None:
    before = [await store.append("r", "r", MessageEvent(content=str(n))) for n in range(3)]
    await store.close()
    again = await reopen()
    assert await again.last_seq("r") == 3
    assert (await again.search(EventQuery(root_id="r"))).items == before
    record = await again.append("r", "r", MessageEvent(content="after restart"))
    assert record.seq == 4


async def test_append_after_close_is_refused(store: Store) -> None:
    await store.close()
    with pytest.raises(RuntimeError):
        await store.append("r", "r", MessageEvent(content="late"))


async def test_submitted_events_are_stored_and_handed_back_in_seq_order(store: Store, reopen) -> None:
    handed: list[int] = []
    events = [MessageEvent(content=str(n)) for n in range(2500)]  # more than one batch
    for event in events:
        store.submit("r", "r", event, lambda record: handed.append(record.seq))
        await store.room()
    while len(handed) < len(events):
        await asyncio.sleep(0.01)
    assert handed == list(range(1, 2501))
    assert [e.seq for e in events] == handed
    other = await reopen()  # handed back only once durable
    assert await other.last_seq("r") == 2500


async def test_submits_and_appends_resume_in_one_seq_order(store: Store) -> None:
    # A publisher fed by both must see one increasing sequence.
    published: list[int] = []

    async def append_then_publish(n: int) -> None:
        record = await store.append("r", "r", MessageEvent(content=str(n)))
        published.append(record.seq)

    tasks = []
    for n in range(400):
        if n % 3:
            store.submit("r", "r", MessageEvent(content=str(n)), lambda record: published.append(record.seq))
        else:
            tasks.append(asyncio.create_task(append_then_publish(n)))
        if n % 50 == 0:
            await asyncio.sleep(0)
    await asyncio.gather(*tasks)
    while len(published) < 400:
        await asyncio.sleep(0.01)
    assert published == list(range(1, 401))


async def test_a_submitted_event_that_cannot_be_stored_is_logged_and_the_rest_are_stored(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    first = await store.append("r", "r", MessageEvent(content="once"))
    handed: list[str] = []
    events = [MessageEvent(content="a"), MessageEvent(id=first.id, content="twice"), MessageEvent(content="b")]
    for event in events:
        store.submit("r", "r", event, lambda record: handed.append(record.json))
    await store.append("r", "r", MessageEvent(content="after"))  # resumes after the submits settled
    await asyncio.sleep(0)
    assert [parse_event(j).content for j in handed] == ["a", "b"]
    assert "MessageEvent of conversation r was not stored" in caplog.text
    assert (await store.get(first.id)).json == first.json


async def test_submit_refuses_what_append_refuses(store: Store) -> None:
    with pytest.raises(ValueError, match="ephemeral"):
        store.submit("r", "r", StreamingDeltaEvent(content="tok"), lambda record: None)
    await store.close()
    with pytest.raises(RuntimeError):
        store.submit("r", "r", MessageEvent(content="late"), lambda record: None)


async def test_flush_returns_once_everything_submitted_before_is_stored(store: Store, reopen) -> None:
    await store.flush()  # nothing queued: at once
    handed: list[int] = []
    for n in range(1500):
        store.submit("r", "r", MessageEvent(content=str(n)), lambda record: handed.append(record.seq))
        if n % 500 == 0:
            await store.room()
    await store.flush()
    other = await reopen()  # durable, as another store over the same database sees
    assert await other.last_seq("r") == 1500
    await asyncio.sleep(0)
    assert handed == list(range(1, 1501))


async def test_a_burst_of_new_trees_is_numbered_from_one_and_stored_whole(store: Store) -> None:
    # Hundreds of conversations created at once put hundreds of new trees in one batch.
    roots = [f"burst-{n}" for n in range(300)]
    await asyncio.gather(*(store.create_conversation(ConversationRecord(id=r, root_id=r)) for r in roots))
    firsts = await asyncio.gather(*(store.append(r, r, MessageEvent(content=f"{r} one")) for r in roots))
    seconds = await asyncio.gather(*(store.append(r, r, MessageEvent(content=f"{r} two")) for r in roots))
    assert {record.seq for record in firsts} == {1} and {record.seq for record in seconds} == {2}
    for root in roots[::37]:
        page = await store.search(EventQuery(root_id=root))
        assert [(e.seq, parse_event(e.json).content) for e in page.items] == [(1, f"{root} one"), (2, f"{root} two")]
        assert await store.last_seq(root) == 2


async def test_a_refused_second_create_does_not_renumber_the_tree(store: Store) -> None:
    await store.create_conversation(ConversationRecord(id="taken", root_id="taken"))
    for n in range(3):
        await store.append("taken", "taken", MessageEvent(content=str(n)))
    with pytest.raises(ValueError, match="already exists"):
        await store.create_conversation(ConversationRecord(id="taken", root_id="taken"))
    assert (await store.append("taken", "taken", MessageEvent(content="after"))).seq == 4


async def test_new_trees_appended_by_callers_cancelled_midway_are_stored_whole(store: Store) -> None:
    roots = [f"cut-{n}" for n in range(200)]
    await asyncio.gather(*(store.create_conversation(ConversationRecord(id=r, root_id=r)) for r in roots))
    callers = [asyncio.create_task(store.append(r, r, MessageEvent(content=r))) for r in roots]
    await asyncio.sleep(0)
    for caller in callers[::2]:
        caller.cancel()
    await asyncio.gather(*callers, return_exceptions=True)
    await store.flush()
    # Every event was queued before its caller was cancelled: the store wrote each, numbered 1.
    for root in roots:
        assert await store.last_seq(root) == 1
    assert sum([await store.count(EventQuery(root_id=r)) for r in roots]) == len(roots)
