"""Conversation records: create, update, trees, searching roots, deleting a tree."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from taskwire.errors import BadRequest, ConversationNotFound, InvalidPageId
from taskwire.events import ConversationStateUpdateEvent, MessageEvent, SubagentFinishedEvent, Usage
from taskwire.store import Store
from taskwire.store.base import ConversationRecord, EventQuery

T0 = datetime(2025, 3, 4, 5, 6, 7, tzinfo=timezone.utc)


def root(n: int, status: str = "idle") -> ConversationRecord:
    return ConversationRecord(
        id=f"root-{n}", root_id=f"root-{n}", status=status, created_at=T0 + timedelta(minutes=n),
        agent={"kind": "native", "tools": ["terminal"]}, workspace=f"/w/{n}",
    )


def child(root_id: str, name: str, minute: int, parent: str | None = None) -> ConversationRecord:
    return ConversationRecord(
        id=name, root_id=root_id, parent_id=parent or root_id, parent_tool_use_id=f"call-{name}",
        subagent_type="general-purpose", description=name, created_at=T0 + timedelta(minutes=minute),
    )


async def test_a_created_conversation_reads_back_equal(store: Store) -> None:
    record = root(1)
    await store.create_conversation(record)
    assert await store.get_conversation(record.id) == record
    assert await store.get_conversation("nope") is None


async def test_creating_a_taken_id_is_refused(store: Store) -> None:
    await store.create_conversation(root(1))
    with pytest.raises(ValueError):
        await store.create_conversation(root(1))


async def test_update_sets_fields_and_updated_at(store: Store) -> None:
    record = root(1)
    await store.create_conversation(record)
    updated = await store.update_conversation(record.id, status="running", title="Hello")
    assert (updated.status, updated.title) == ("running", "Hello")
    assert updated.updated_at > record.updated_at
    assert updated.created_at == record.created_at
    assert await store.get_conversation(record.id) == updated


async def test_update_of_an_unknown_conversation_raises_not_found(store: Store) -> None:
    with pytest.raises(ConversationNotFound):
        await store.update_conversation("nope", status="running")


async def test_update_refuses_unknown_or_fixed_fields(store: Store) -> None:
    await store.create_conversation(root(1))
    with pytest.raises(TypeError):
        await store.update_conversation("root-1", stauts="running")
    with pytest.raises(TypeError):
        await store.update_conversation("root-1", root_id="elsewhere")
    assert (await store.get_conversation("root-1")).status == "idle"


HOSTILE_TEXT = 'a "quote", a \\ backslash, a NUL \x00, \u00e9cole \u2014 \U0001f600, $.title, \')'


async def test_update_keeps_any_text_and_every_other_field_exactly(store: Store) -> None:
    # An update writes only the fields it sets: whatever they hold reads back as given, and
    # the record is what setting them on the model gives.
    record = root(1).model_copy(update={"usage": Usage(input_tokens=5, llm_calls=1), "label": "task-1"})
    await store.create_conversation(record)
    updated = await store.update_conversation(
        record.id, title=HOSTILE_TEXT, result=HOSTILE_TEXT, usage=record.usage + Usage(output_tokens=7, llm_calls=1),
        agent={"kind": "native", "note": HOSTILE_TEXT, "n": 1.5e-7, "big": 2**62},
    )
    expected = record.model_copy(update={
        "title": HOSTILE_TEXT, "result": HOSTILE_TEXT, "usage": Usage(input_tokens=5, output_tokens=7, llm_calls=2),
        "agent": {"kind": "native", "note": HOSTILE_TEXT, "n": 1.5e-7, "big": 2**62}, "updated_at": updated.updated_at,
    })
    assert updated == expected
    assert await store.get_conversation(record.id) == expected
    cleared = await store.update_conversation(record.id, title=None)
    assert cleared.title is None and cleared.result == HOSTILE_TEXT


async def test_an_update_of_a_held_record_gives_what_reading_it_back_gives(store: Store) -> None:
    # ``held``: the caller's own copy (a live host's), which a store may return with the
    # fields set instead of parsing the stored record: equal, and stored all the same.
    record = root(1).model_copy(update={"usage": Usage(input_tokens=5, llm_calls=1), "title": HOSTILE_TEXT})
    await store.create_conversation(record)
    held = await store.get_conversation(record.id)
    usage = held.usage + Usage(output_tokens=7, llm_calls=1)
    updated = await store.update_conversation(record.id, held=held, usage=usage, status="running")
    assert updated == await store.get_conversation(record.id)
    assert updated == record.model_copy(update={"usage": usage, "status": "running", "updated_at": updated.updated_at})
    assert updated.updated_at > record.updated_at
    assert updated.model_dump_json() == (await store.get_conversation(record.id)).model_dump_json()
    with pytest.raises(ConversationNotFound):
        await store.update_conversation("nope", held=held, status="running")
    with pytest.raises(ValidationError):
        await store.update_conversation(record.id, held=held, usage={"input_tokens": "many"})
    assert await store.get_conversation(record.id) == updated


async def test_update_refuses_a_bad_value_and_writes_nothing(store: Store) -> None:
    record = root(1)
    await store.create_conversation(record)
    with pytest.raises(ValidationError):
        await store.update_conversation(record.id, status="sleeping", title="never")
    with pytest.raises(ValidationError):
        await store.update_conversation(record.id, usage={"input_tokens": "many"})
    with pytest.raises(TypeError):
        await store.update_conversation(record.id, updated_at=T0)
    assert await store.get_conversation(record.id) == record


async def test_tree_lists_the_root_first_then_by_creation(store: Store) -> None:
    # The root is created last on purpose: it still comes first.
    await store.create_conversation(child("root-1", "sub-b", 5))
    await store.create_conversation(child("root-1", "sub-a", 3))
    await store.create_conversation(child("root-1", "sub-c", 4, parent="sub-a"))
    await store.create_conversation(root(1))
    await store.create_conversation(root(2))
    assert [r.id for r in await store.tree("root-1")] == ["root-1", "sub-a", "sub-c", "sub-b"]
    assert [r.id for r in await store.tree("root-2")] == ["root-2"]
    assert await store.tree("nope") == []


async def test_search_lists_roots_only_newest_first_across_pages(store: Store) -> None:
    for n in range(7):
        await store.create_conversation(root(n, status="finished" if n % 2 else "idle"))
        await store.create_conversation(child(f"root-{n}", f"sub-{n}", n + 100))
    seen, page_id = [], None
    while True:
        page = await store.search_conversations(limit=3, page_id=page_id)
        seen.append([r.id for r in page.items])
        if page.next_page_id is None:
            break
        page_id = page.next_page_id
    assert seen == [["root-6", "root-5", "root-4"], ["root-3", "root-2", "root-1"], ["root-0"]]
    assert await store.count_conversations() == 7


async def test_search_and_count_filter_by_status(store: Store) -> None:
    for n in range(7):
        await store.create_conversation(root(n, status="finished" if n % 2 else "idle"))
    await store.create_conversation(child("root-1", "sub-finished", 50))
    await store.update_conversation("sub-finished", status="finished")
    first = await store.search_conversations(status="finished", limit=2)
    second = await store.search_conversations(status="finished", limit=2, page_id=first.next_page_id)
    assert [r.id for r in first.items + second.items] == ["root-5", "root-3", "root-1"]
    assert second.next_page_id is None
    assert await store.count_conversations(status="finished") == 3
    assert await store.count_conversations(status="running") == 0


async def test_conversations_created_in_the_same_instant_page_by_id(store: Store) -> None:
    for n in range(5):
        await store.create_conversation(ConversationRecord(id=f"same-{n}", root_id=f"same-{n}", created_at=T0))
    first = await store.search_conversations(limit=2)
    rest = await store.search_conversations(limit=5, page_id=first.next_page_id)
    assert [r.id for r in first.items + rest.items] == [f"same-{n}" for n in (4, 3, 2, 1, 0)]


async def test_invalid_conversation_page_ids_are_refused(store: Store) -> None:
    for n in range(3):
        await store.create_conversation(root(n, status="idle"))
    token = (await store.search_conversations(limit=1)).next_page_id
    for page_id in ("garbage", token[:-3]):
        with pytest.raises(InvalidPageId):
            await store.search_conversations(limit=1, page_id=page_id)
    with pytest.raises(InvalidPageId):  # made for another status filter
        await store.search_conversations(status="idle", limit=1, page_id=token)
    for n in range(3):
        await store.append("root-0", "root-0", MessageEvent(content=str(n)))
    event_token = (await store.search(EventQuery(root_id="root-0"), limit=1)).next_page_id
    with pytest.raises(InvalidPageId):
        await store.search_conversations(limit=1, page_id=event_token)


async def test_deleting_a_root_deletes_its_tree_records_and_events(store: Store) -> None:
    for n in (1, 2):
        await store.create_conversation(root(n))
        await store.create_conversation(child(f"root-{n}", f"sub-{n}", 10))
        await store.append(f"root-{n}", f"root-{n}", MessageEvent(content="root"))
        await store.append(f"sub-{n}", f"root-{n}", MessageEvent(content="sub"))
    doomed = (await store.search(EventQuery(root_id="root-1"))).items
    await store.delete_conversation("root-1")
    assert await store.get_conversation("root-1") is None
    assert await store.get_conversation("sub-1") is None
    assert await store.tree("root-1") == []
    assert await store.count(EventQuery(root_id="root-1")) == 0
    assert await store.get_many([r.id for r in doomed]) == []
    assert await store.last_seq("root-1") == 0
    assert await store.count_conversations() == 1
    # The other tree is untouched.
    assert [r.id for r in await store.tree("root-2")] == ["root-2", "sub-2"]
    assert await store.count(EventQuery(root_id="root-2")) == 2
    # A root id used again starts a fresh log.
    await store.create_conversation(root(1))
    assert (await store.append("root-1", "root-1", MessageEvent(content="again"))).seq == 1


async def test_deleting_a_sub_agent_or_an_unknown_conversation_is_refused(store: Store) -> None:
    await store.create_conversation(root(1))
    await store.create_conversation(child("root-1", "sub-1", 5))
    with pytest.raises(BadRequest):
        await store.delete_conversation("sub-1")
    with pytest.raises(ConversationNotFound):
        await store.delete_conversation("nope")
    assert len(await store.tree("root-1")) == 2


async def test_reopened_store_keeps_conversations(store: Store, reopen) -> None:
    await store.create_conversation(root(1))
    await store.update_conversation("root-1", status="paused")
    await store.close()
    again = await reopen()
    assert (await again.get_conversation("root-1")).status == "paused"
    assert await again.count_conversations(status="paused") == 1


async def test_many_writes_at_once_all_land_and_one_that_fails_fails_alone(store: Store) -> None:
    # Writes that come together run together (SQLite: one trip for a group): each still
    # succeeds or fails on its own.
    await store.create_conversation(root(0))
    creates = [store.create_conversation(root(n)) for n in range(1, 150)] + [store.create_conversation(root(0))]
    results = await asyncio.gather(*creates, return_exceptions=True)
    assert [type(r) for r in results] == [type(None)] * 149 + [ValueError]
    updates = [store.update_conversation(f"root-{n}", title=f"t{n}", status="running") for n in range(150)]
    updates.append(store.update_conversation("nope", title="x"))
    results = await asyncio.gather(*updates, return_exceptions=True)
    assert isinstance(results[-1], ConversationNotFound)
    assert [r.title for r in results[:-1]] == [f"t{n}" for n in range(150)]
    assert await store.count_conversations(status="running") == 150


async def test_record_writes_and_appends_at_once_all_land(store: Store) -> None:
    # On SQLite the record writes ride along with the batches of events: both must land whole.
    for n in range(20):
        await store.create_conversation(root(n))
    appends = [store.append(f"root-{n % 20}", f"root-{n % 20}", MessageEvent(content=f"m{n}")) for n in range(200)]
    updates = [store.update_conversation(f"root-{n % 20}", title=f"t{n}") for n in range(200)]
    results = await asyncio.gather(*[w for pair in zip(appends, updates) for w in pair])
    assert all(r is not None for r in results)
    for n in range(20):
        title = (await store.get_conversation(f"root-{n}")).title  # one of its own updates
        assert title is not None and int(title[1:]) % 20 == n
        assert await store.count(EventQuery(root_id=f"root-{n}")) == 10


async def test_a_status_event_and_a_subagents_end_set_their_conversations_row_in_their_own_transaction(store: Store) -> None:
    """The row and its stream agree at every moment: a status is one write, its event."""
    record, sub = root(1), child("root-1", "sub-1", 2)
    await store.create_conversation(record)
    await store.create_conversation(sub)
    running = ConversationStateUpdateEvent(key="status", value="running")
    paused = ConversationStateUpdateEvent(key="status", value="paused", reason="the store could not write")
    paused.subagent_id, paused.parent_tool_use_id = sub.id, sub.parent_tool_use_id
    await asyncio.gather(  # one batch, beside events that are no status
        store.append(record.id, record.id, MessageEvent(role="user", content="hi")),
        store.append(record.id, record.id, running),
        store.append(sub.id, record.id, paused),
        store.append(record.id, record.id, ConversationStateUpdateEvent(key="usage", value={"llm_calls": 1})),
    )
    stored_root, stored_sub = await store.get_conversation(record.id), await store.get_conversation(sub.id)
    assert stored_root is not None and stored_sub is not None
    assert (stored_root.status, stored_root.status_reason) == ("running", None)
    assert stored_root.updated_at == running.timestamp
    assert (stored_sub.status, stored_sub.status_reason) == ("paused", "the store could not write")
    assert [r.status for r in (await store.search_conversations(status="running")).items] == ["running"]
    # A sub-agent's end states its outcome: the row's with it.
    finished = SubagentFinishedEvent(status="cancelled", result="stopped")
    finished.subagent_id, finished.parent_tool_use_id = sub.id, sub.parent_tool_use_id
    await store.append(sub.id, record.id, finished)
    ended = await store.get_conversation(sub.id)
    assert ended is not None and (ended.subagent_status, ended.result, ended.status) == ("cancelled", "stopped", "paused")
    # Not stored, not set: the row never runs ahead of its stream.
    again = ConversationStateUpdateEvent(key="status", value="finished")
    again.id = running.id  # an id already stored: this append fails whole
    with pytest.raises(ValueError):
        await store.append(record.id, record.id, again)
    assert (await store.get_conversation(record.id)).status == "running"  # type: ignore[union-attr]
