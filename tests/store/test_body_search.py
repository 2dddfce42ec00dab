"""``body=`` on both stores against its definition, said in Python.

The definition (``taskwire.events.body_text``): an event matches a term when
``fold(term) in body_text(event)``. The oracle here applies it to the stored JSON of every
event of a random log, and every store must answer the same, alone and with the other filters,
page by page in both orders, and in counts: short terms (read row by row) and long ones (from
the trigram index), LIKE's and FTS5's special characters, quotes, field names, other scripts
in both cases, emoji.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from taskwire.events import (
    ACPToolCallEvent,
    ActionEvent,
    AgentErrorEvent,
    ConversationStateUpdateEvent,
    Event,
    EventRecord,
    MessageEvent,
    ObservationEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
)
from taskwire.events.body_text import fold, stored_body_text
from taskwire.store import Store, postgres_text
from taskwire.store.base import ConversationRecord, EventQuery
from taskwire.store.sqlite import SQLiteStore
from taskwire.store.postgres import _EventWriter as PostgresEventWriter
from taskwire.store.sqlite_writer import SQLiteEventWriter

ROOT, SUB = "root-text", "sub-text"
WORDS = [
    "needle", "NEEDLE", "Needle in", "école", "École", "ÉCOLE", "σίσυφος", "ΣΊΣΥΦΟΣ", "straße", "STRASSE",
    "\"double\"", "it's", "100%", "a_b", "back\\slash", "\\", "%", "_", "\"", "'", "*", "-", "OR", "AND", "NOT",
    "NEAR(", "col:umn", "^start", "🙂", "👍🏽", "家族", "e", "ab", "the", "and then", "x", "\t", "é",
]  # fmt: skip
FIELD_NAMES = ["role", "content", "tool_name", "arguments", "kind", "timestamp", "tool_call_id", "source"]


def phrase(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 4)))


def random_event(rng: random.Random, n: int) -> Event:
    """One event of a random kind whose readable text is drawn from ``WORDS`` (never from the
    field names, so a match on one of those would be a match on the JSON's keys)."""
    pick = rng.randrange(9)
    text = phrase(rng)
    if pick == 0:
        return MessageEvent(role=rng.choice(["user", "assistant"]), content=text)
    if pick == 1:
        return ActionEvent(
            tool_name=rng.choice(["terminal", "file_editor"]), tool_call_id=f"c{n}",
            arguments={"command": text, "nested": {"list": [phrase(rng), 7, True]}},
        )  # fmt: skip
    if pick == 2:
        return ObservationEvent(tool_name="terminal", tool_call_id=f"c{n}", content=text, is_error=rng.random() < 0.2)
    if pick == 3:
        return AgentErrorEvent(error=text, code="llm_error")
    if pick == 4:
        block = {"type": "content", "content": {"type": "text", "text": phrase(rng)}}
        return ACPToolCallEvent(tool_call_id=f"a{n}", title=text, status="completed", content=[block])
    if pick == 5:
        return SubagentStartedEvent(description=text, subagent_type="general-purpose")
    if pick == 6:
        return SubagentFinishedEvent(result=text)
    if pick == 7:
        return ConversationStateUpdateEvent(key="status", value="running")
    return MessageEvent(content="")


def oracle(records: list[EventRecord], query: EventQuery) -> list[EventRecord]:
    """The events ``query`` means: the definition applied to the stored JSON, plus the other
    filters in Python."""
    term = fold(query.body or "")
    return [
        r
        for r in records
        if term in stored_body_text(r.json)
        and (query.kinds is None or r.kind in query.kinds)
        and (query.conversation_ids is None or r.conversation_id in query.conversation_ids)
        and (query.after_seq is None or (r.seq or 0) > query.after_seq)
        and (query.until_seq is None or (r.seq or 0) <= query.until_seq)
    ]


async def load(store: Store, seed: int, count: int, indexed: float = 1.0, monkeypatch: Any = None) -> list[EventRecord]:
    """A random log; on SQLite, the first ``indexed`` part of it in the text index and the
    rest not yet (a search reads both)."""
    rng = random.Random(seed)
    records = []
    for n in range(count):
        if n == int(count * indexed):
            await store.index_pending()  # type: ignore[attr-defined]
            for writer in (SQLiteEventWriter, PostgresEventWriter):
                monkeypatch.setattr(writer, "idle_work", _no_idle_work)
        event = random_event(rng, n)
        conversation = ROOT
        if rng.random() < 0.3:
            conversation, event.subagent_id, event.parent_tool_use_id = SUB, SUB, "call-task"
        records.append(await store.append(conversation, ROOT, event))
    # Another tree with the same texts: a search must never reach into it.
    for n in range(20):
        await store.append("other-tree", "other-tree", random_event(rng, n))
    if indexed == 1.0:
        await store.index_pending()  # type: ignore[attr-defined]
    return records


async def _no_idle_work(self: Any) -> bool:
    return False


async def everything(store: Store, query: EventQuery, *, limit: int, order: str = "TIMESTAMP") -> list[EventRecord]:
    found: list[EventRecord] = []
    page_id = None
    while True:
        page = await store.search(query, limit=limit, page_id=page_id, order=order)  # type: ignore[arg-type]
        found.extend(page.items)
        if page.next_page_id is None:
            return found
        page_id = page.next_page_id


def terms(records: list[EventRecord], rng: random.Random) -> list[str]:
    """Every word, its other cases, field names, pieces of stored texts, and absent terms."""
    found = set(WORDS) | set(FIELD_NAMES) | {w.upper() for w in WORDS} | {w.lower() for w in WORDS}
    found |= {"ΣΊΣΥΦΟΣ".lower(), "σίσυφοσ", "SS", "ss", "zzz-absent", "needle needle needle", "\\\"", "\\\\"}
    texts = [stored_body_text(r.json) for r in records]
    for text in rng.sample([t for t in texts if len(t) > 4], 15):
        start = rng.randrange(len(text) - 3)
        found.add(text[start : start + rng.randint(1, 8)])
    return sorted(t for t in found if t)


@pytest.mark.parametrize("seed, indexed", [(1, 1.0), (2, 0.5), (3, 0.0)], ids=["indexed", "half indexed", "not yet indexed"])
async def test_body_search_is_its_definition_on_a_random_log(store: Store, seed: int, indexed: float, monkeypatch) -> None:
    records = await load(store, seed, 160, indexed, monkeypatch)
    await finds_its_definition(store, records, random.Random(seed))


@pytest.mark.parametrize("by", ["sample", "count"], ids=["common by its sample", "common by the index's count"])
async def test_a_common_term_read_in_order_finds_what_the_index_finds(store: Store, by: str, monkeypatch) -> None:
    """PostgreSQL reads a common term's page in ``seq`` order instead of gathering it from the
    trigram index; every term is made common here, by either test (SQLite has no such choice)."""
    monkeypatch.setattr(postgres_text, "SAMPLE_HITS", 1 if by == "sample" else 10**9)
    monkeypatch.setattr(postgres_text, "COMMON", 1 if by == "count" else 10**9)
    records = await load(store, 4, 160, 0.5, monkeypatch)
    await finds_its_definition(store, records, random.Random(4))


async def finds_its_definition(store: Store, records: list[EventRecord], rng: random.Random) -> None:
    """Every term of ``terms``, page by page in both orders and counted, as the oracle says."""
    for term in terms(records, rng):
        query = EventQuery(root_id=ROOT, body=term)
        expected = oracle(records, query)
        assert await everything(store, query, limit=7) == expected, term
        assert await everything(store, query, limit=100, order="TIMESTAMP_DESC") == expected[::-1], term
        assert await store.count(query) == len(expected), term


async def test_body_search_combines_with_the_other_filters(store: Store, monkeypatch) -> None:
    records = await load(store, 3, 160, 0.6, monkeypatch)
    filters: list[dict[str, Any]] = [
        {"kinds": ["MessageEvent"]},
        {"kinds": ["ActionEvent", "ObservationEvent"]},
        {"conversation_ids": [SUB]},
        {"conversation_ids": [ROOT, SUB], "kinds": ["MessageEvent", "AgentErrorEvent", "ACPToolCallEvent"]},
        {"after_seq": 50},
        {"after_seq": 20, "until_seq": 120, "conversation_ids": [ROOT]},
    ]
    for term in ["needle", "é", "école", "\"double\"", "%", "the", "🙂", "zzz-absent"]:
        for extra in filters:
            query = EventQuery(root_id=ROOT, body=term, **extra)
            expected = oracle(records, query)
            assert await everything(store, query, limit=3) == expected, (term, extra)
            assert await everything(store, query, limit=5, order="TIMESTAMP_DESC") == expected[::-1], (term, extra)
            assert await store.count(query) == len(expected), (term, extra)


async def test_what_a_new_user_tries_finds_what_they_mean(store: Store) -> None:
    said = [
        MessageEvent(role="user", source="user", content='He said "double" twice'),
        MessageEvent(content="À l'École polytechnique"),
        ObservationEvent(tool_name="terminal", tool_call_id="c1", content="ΣΊΣΥΦΟΣ rolls the stone"),
        ActionEvent(tool_name="terminal", tool_call_id="c2", arguments={"command": "echo 100% done"}),
        AgentErrorEvent(error="path C:\\temp not found"),
        ConversationStateUpdateEvent(key="status", value="finished"),
    ]
    records = [await store.append(ROOT, ROOT, event) for event in said]

    async def found(term: str) -> list[str]:
        page = await store.search(EventQuery(root_id=ROOT, body=term))
        return [record.id for record in page.items]

    ids = [record.id for record in records]
    assert await found("role") == [] and await found("content") == [] and await found("tool_name") == []
    assert await found('"double"') == [ids[0]]
    assert await found("école") == [ids[1]] and await found("ÉCOLE") == [ids[1]]
    assert await found("σίσυφος") == [ids[2]]
    assert await found("\\") == [ids[4]]
    assert await found("100%") == [ids[3]] and await found("%") == [ids[3]] and await found("_") == []
    assert await found("terminal") == [ids[3]]  # the tool's name, not the observation's
    assert await found("finished") == []  # state updates hold no text


async def test_a_deleted_tree_leaves_nothing_to_find(store: Store) -> None:
    for root in ("tree-a", "tree-b"):
        await store.create_conversation(ConversationRecord(id=root, root_id=root))
        for n in range(30):
            await store.append(root, root, MessageEvent(content=f"the same needle {n}"))
    await store.index_pending()  # type: ignore[attr-defined]
    await store.delete_conversation("tree-a")
    await store.create_conversation(ConversationRecord(id="tree-c", root_id="tree-c"))
    kept = [await store.append("tree-c", "tree-c", MessageEvent(content="the same needle again"))]
    assert await store.count(EventQuery(root_id="tree-a", body="needle")) == 0
    assert await store.count(EventQuery(root_id="tree-b", body="needle")) == 30
    assert (await store.search(EventQuery(root_id="tree-c", body="same needle"))).items == kept
    await store.index_pending()  # type: ignore[attr-defined]
    if isinstance(store, SQLiteStore):
        # The index's own check: what the delete took out matched what was put in.
        rows = await store._db.fetchall("SELECT count(*) FROM event_text WHERE event_text MATCH '\"edl\"'")
        assert rows[0][0] == 31
    else:
        assert await store.pool.fetchval("SELECT count(*) FROM event_text") == 31  # type: ignore[attr-defined]
