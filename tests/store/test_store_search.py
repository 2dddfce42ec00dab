"""Searching the log: every filter alone and combined, keyset pagination, counts, lookups."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
from typing import Any

import pytest

from taskwire.errors import InvalidPageId
from taskwire.events import ActionEvent, MessageEvent
from taskwire.store import Store
from taskwire.store.base import EventQuery

ROOT = "root-a"

SINGLE_FILTERS: dict[str, dict[str, Any]] = {
    "whole tree": {},
    "root stream": {"conversation_ids": [ROOT]},
    "two streams": {"conversation_ids": [ROOT, "sub-2"]},
    "no stream": {"conversation_ids": []},
    "one kind": {"kinds": ["ActionEvent"]},
    "two kinds": {"kinds": ["MessageEvent", "SubagentStartedEvent"]},
    "source": {"source": "user"},
    "body, other case": {"body": "needle"},
    "body, LIKE characters literal": {"body": "100%_d"},
    "body, no match": {"body": "100%x"},
    "time from": {"timestamp_gte": 20},
    "time until": {"timestamp_lt": 10},
    "after seq": {"after_seq": 7},
    "until seq": {"until_seq": 9},
    "parent tool use": {"parent_tool_use_id": "call-task-1"},
    "nested parent tool use": {"parent_tool_use_id": "call-task-2"},
    "subagent": {"subagent_id": "sub-1"},
}


def build(sample, **fields: Any) -> EventQuery:
    for name in ("timestamp_gte", "timestamp_lt"):
        if isinstance(fields.get(name), int):
            fields[name] = sample.at(fields[name])
    return EventQuery(root_id=sample.root, **fields)


@pytest.mark.parametrize("filters", SINGLE_FILTERS.values(), ids=SINGLE_FILTERS.keys())
async def test_each_filter_alone_finds_what_it_means(store: Store, sample, search_all, filters) -> None:
    query = build(sample, **filters)
    expected = sample.expected(query)
    assert await search_all(store, query) == expected
    assert await search_all(store, query, order="TIMESTAMP_DESC") == expected[::-1]
    assert await store.count(query) == len(expected)


COMBINED = [
    (a, b)
    for a, b in itertools.combinations(list(SINGLE_FILTERS.items())[1:], 2)
    if not set(a[1]) & set(b[1])
]


@pytest.mark.parametrize("pair", COMBINED, ids=[f"{a[0]} + {b[0]}" for a, b in COMBINED])
async def test_filters_combine_as_and(store: Store, sample, search_all, pair) -> None:
    query = build(sample, **pair[0][1], **pair[1][1])
    expected = sample.expected(query)
    assert await search_all(store, query, limit=3) == expected
    assert await store.count(query) == len(expected)


async def test_many_filters_at_once(store: Store, sample, search_all) -> None:
    query = build(
        sample,
        conversation_ids=[sample.sub1, sample.sub2],
        kinds=["ActionEvent", "ObservationEvent", "MessageEvent"],
        source="agent",
        body="TERMINAL",
        timestamp_gte=1,
        after_seq=3,
        until_seq=40,
        parent_tool_use_id=sample.task1,
    )
    expected = sample.expected(query)
    assert expected, "the sample should match something here"
    assert await search_all(store, query, limit=2) == expected
    assert await store.count(query) == len(expected)


async def test_a_search_stays_inside_its_tree(store: Store, sample) -> None:
    other = (await store.search(EventQuery(root_id=sample.other_root))).items
    assert [r.root_id for r in other] == [sample.other_root] * 4
    assert [r.seq for r in other] == [1, 2, 3, 4]
    assert (await store.search(EventQuery(root_id="no-such-tree"))).items == []
    assert await store.count(EventQuery(root_id="no-such-tree")) == 0


@pytest.mark.parametrize("order", ["TIMESTAMP", "TIMESTAMP_DESC"])
@pytest.mark.parametrize("limit", [1, 4, 7, 100])
async def test_pages_cover_the_log_without_duplicates_or_gaps(store: Store, sample, order, limit) -> None:
    query = EventQuery(root_id=sample.root)
    expected = sample.expected(query)
    if order == "TIMESTAMP_DESC":
        expected = expected[::-1]
    pages, page_id = [], None
    while True:
        page = await store.search(query, limit=limit, page_id=page_id, order=order)
        pages.append(page.items)
        if page.next_page_id is None:
            break
        page_id = page.next_page_id
    assert [r for items in pages for r in items] == expected
    assert all(len(items) == limit for items in pages[:-1])
    assert 1 <= len(pages[-1]) <= limit  # no empty trailing page
    assert len(pages) == -(-len(expected) // limit)


async def test_a_filtered_search_pages_deep_with_after_seq(store: Store, sample, search_all) -> None:
    query = build(sample, kinds=["ObservationEvent"], after_seq=10)
    assert await search_all(store, query, limit=2) == sample.expected(query)
    assert await search_all(store, query, limit=2, order="TIMESTAMP_DESC") == sample.expected(query)[::-1]


def _tamper(page_id: str, position: Any) -> str:
    """``page_id`` with another position and its mac kept (``<payload>.<mac>``)."""
    mac = page_id.split(".")[1]
    return base64.urlsafe_b64encode(json.dumps(position).encode()).rstrip(b"=").decode() + "." + mac


async def test_invalid_page_ids_are_refused(store: Store, sample) -> None:
    query = EventQuery(root_id=sample.root)
    first = await store.search(query, limit=5)
    token = first.next_page_id
    assert token is not None
    desc_token = (await store.search(query, limit=5, order="TIMESTAMP_DESC")).next_page_id
    bad = [
        "garbage",
        "",
        "!!!not base64!!!",
        base64.urlsafe_b64encode(b"not json").decode(),
        base64.urlsafe_b64encode(b'{"p": 5}').decode(),
        _tamper(token, 1),
        _tamper(token, "5"),
        token.split(".")[0] + "." + "A" * 22,
        token[:-2],
    ]
    for page_id in bad:
        with pytest.raises(InvalidPageId):
            await store.search(query, limit=5, page_id=page_id)
    with pytest.raises(InvalidPageId):  # a token made for the other order
        await store.search(query, limit=5, page_id=desc_token, order="TIMESTAMP")
    with pytest.raises(InvalidPageId):
        await store.search(query, limit=5, page_id=token, order="TIMESTAMP_DESC")
    for other in (EventQuery(root_id=sample.other_root), EventQuery(root_id=sample.root, kinds=["ActionEvent"])):
        with pytest.raises(InvalidPageId):  # a token made for other filters
            await store.search(other, limit=5, page_id=token)
    # The real token still works: refusals never spoil it.
    second = await store.search(query, limit=5, page_id=token)
    assert second.items == sample.expected(query)[5:10]


async def test_a_conversation_page_id_is_not_an_event_page_id(store: Store, sample) -> None:
    from taskwire.store.base import ConversationRecord

    for n in range(3):
        await store.create_conversation(ConversationRecord(id=f"c{n}", root_id=f"c{n}"))
    token = (await store.search_conversations(limit=1)).next_page_id
    assert token is not None
    with pytest.raises(InvalidPageId):
        await store.search(EventQuery(root_id=sample.root), page_id=token)


async def test_page_limits_outside_1_to_100_are_refused(store: Store) -> None:
    for limit in (0, 101):
        with pytest.raises(ValueError):
            await store.search(EventQuery(root_id="r"), limit=limit)


async def test_get_finds_any_event_and_get_many_keeps_the_asked_order(store: Store, sample) -> None:
    records = sample.records
    assert await store.get(records[5].id) == records[5]
    assert await store.get("missing") is None
    asked = [records[9].id, "missing", records[0].id, records[-1].id]
    assert await store.get_many(asked) == [records[9], records[0], records[-1]]
    assert await store.get_many([]) == []
    many = [r.id for r in records] * 20  # more ids than one query may hold
    assert await store.get_many(many) == records * 20


async def test_count_follows_the_filters(store: Store, sample) -> None:
    assert await store.count(EventQuery(root_id=sample.root)) == len(sample.expected(EventQuery(root_id=sample.root)))
    assert await store.count(EventQuery(root_id=sample.other_root)) == 4
    assert await store.count(EventQuery(root_id=sample.root, kinds=["SubagentStartedEvent"])) == 2


async def test_counts_stay_exact_through_batches_and_lone_appends(store: Store, search_all) -> None:
    def event(n: int):
        return MessageEvent(content=str(n)) if n % 3 else ActionEvent(tool_name="t", tool_call_id=f"c{n}")

    await asyncio.gather(*(store.append(("r", "c")[n % 2], "r", event(n)) for n in range(400)))
    for n in range(30):
        await store.append("r", "r", event(n))
    await asyncio.gather(*(store.append("c", "r", event(n)) for n in range(100)))
    queries = [
        EventQuery(root_id="r"),
        EventQuery(root_id="r", conversation_ids=["r"]),
        EventQuery(root_id="r", conversation_ids=["c"], kinds=["ActionEvent"]),
        EventQuery(root_id="r", conversation_ids=["r", "c"], kinds=["MessageEvent", "ActionEvent"]),
        EventQuery(root_id="r", kinds=["MessageEvent"]),
        EventQuery(root_id="r", kinds=[]),
        EventQuery(root_id="r", kinds=["ActionEvent"], after_seq=250),
    ]
    for query in queries:
        assert await store.count(query) == len(await search_all(store, query)), query
