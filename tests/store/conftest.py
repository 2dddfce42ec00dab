"""The store contract suite runs once per backend.

``store_url`` names a fresh, empty database for the backend under test; a second backend adds
one ``params`` entry and one branch there (e.g. ``postgres``: a new database on the test
server, dropped afterwards). ``open_store`` (``taskwire.store``) picks the class from the URL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta, timezone

import pytest

from taskwire.events import (
    ActionEvent,
    ConversationStateUpdateEvent,
    Event,
    EventRecord,
    MessageEvent,
    ObservationEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
)
from taskwire.events.body_text import fold, stored_body_text
from taskwire.store import Store, open_store
from taskwire.store.base import EventQuery
from tests.services import postgres_schema_url

BACKENDS = ["sqlite", "postgres"]

OpenStore = Callable[[], Awaitable[Store]]


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    if request.param == "sqlite":
        # A folder that does not exist yet: the store creates it.
        return f"sqlite:///{tmp_path_factory.mktemp('store')}/data/taskwire.db"
    if request.param == "postgres":
        # A schema of its own on the test server, dropped afterwards.
        return postgres_schema_url(request)
    raise AssertionError(f"no database for backend {request.param!r}")


@pytest.fixture
async def reopen(store_url: str) -> AsyncIterator[OpenStore]:
    """Opens a new store over the test's database (as a restarted server would)."""
    opened: list[Store] = []

    async def open_one() -> Store:
        store = open_store(store_url)
        await store.open()
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        await store.close()


@pytest.fixture
async def store(reopen: OpenStore) -> Store:
    return await reopen()


T0 = datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)


class SampleLog:
    """Two trees: the first with a sub-agent and a nested one, one event a second from
    ``T0``. ``records`` are what the appends returned, in append order."""

    root, other_root = "root-a", "root-b"
    sub1, sub2 = "sub-1", "sub-2"
    task1, task2 = "call-task-1", "call-task-2"

    def __init__(self, records: list[EventRecord]) -> None:
        self.records = records

    @staticmethod
    def at(second: int) -> datetime:
        return T0 + timedelta(seconds=second)

    @classmethod
    def events(cls) -> list[tuple[str, str, Event]]:
        """(conversation, root, event) in append order."""
        plan: list[tuple[str, str, Event]] = []

        def add(conversation: str, root: str, event: Event) -> None:
            event.timestamp = cls.at(len(plan))
            if conversation not in (cls.root, cls.other_root):
                event.subagent_id = conversation
                event.parent_tool_use_id = cls.task1 if conversation == cls.sub1 else cls.task2
            plan.append((conversation, root, event))

        root, other = cls.root, cls.other_root
        for turn in range(4):
            add(root, root, MessageEvent(role="user", source="user", content=f"Please run step {turn}"))
            add(root, root, ActionEvent(tool_name="terminal", tool_call_id=f"call-{turn}", arguments={"command": "ls"}))
            add(root, root, ObservationEvent(tool_name="terminal", tool_call_id=f"call-{turn}", content="a 100%_done"))
            add(other, other, MessageEvent(role="user", source="user", content=f"Other tree {turn}"))
        add(root, root, ActionEvent(tool_name="task", tool_call_id=cls.task1, arguments={"prompt": "dig"}))
        add(cls.sub1, root, SubagentStartedEvent(description="dig"))
        for turn in range(3):
            add(cls.sub1, root, ActionEvent(tool_name="terminal", tool_call_id=f"sub-call-{turn}"))
            add(cls.sub1, root, ObservationEvent(tool_name="terminal", tool_call_id=f"sub-call-{turn}", content="été"))
        add(cls.sub1, root, ActionEvent(tool_name="task", tool_call_id=cls.task2, arguments={"prompt": "deeper"}))
        add(cls.sub2, root, SubagentStartedEvent(description="deeper", parent_subagent_id=cls.sub1))
        add(cls.sub2, root, MessageEvent(content="Found the NEEDLE here"))
        add(cls.sub2, root, SubagentFinishedEvent(result="needle"))
        add(cls.sub1, root, SubagentFinishedEvent(result="dug"))
        add(root, root, ObservationEvent(tool_name="task", tool_call_id=cls.task1, content="dug"))
        add(root, root, ConversationStateUpdateEvent(key="status", value="finished"))
        add(root, root, MessageEvent(content="All done, said the agent"))
        return plan

    def expected(self, query: EventQuery) -> list[EventRecord]:
        """What ``query`` means, said in Python: the oracle every backend is checked against."""
        return [record for record in self.records if _matches(query, record)]


def _matches(query: EventQuery, record: EventRecord) -> bool:
    seq = record.seq or 0
    return all(
        (
            record.root_id == query.root_id,
            query.conversation_ids is None or record.conversation_id in query.conversation_ids,
            query.kinds is None or record.kind in query.kinds,
            query.source is None or record.source == query.source,
            not query.body or fold(query.body) in stored_body_text(record.json),
            query.timestamp_gte is None or record.timestamp >= _z(query.timestamp_gte),
            query.timestamp_lt is None or record.timestamp < _z(query.timestamp_lt),
            query.after_seq is None or seq > query.after_seq,
            query.until_seq is None or seq <= query.until_seq,
            query.parent_tool_use_id is None or record.parent_tool_use_id == query.parent_tool_use_id,
            query.subagent_id is None or record.subagent_id == query.subagent_id,
        )
    )


def _z(value: datetime) -> str:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.fixture
async def sample(store: Store) -> SampleLog:
    """``SampleLog.events`` appended one by one, in order."""
    return SampleLog([await store.append(c, r, e) for c, r, e in SampleLog.events()])


SearchAll = Callable[..., Awaitable[list[EventRecord]]]


@pytest.fixture
def search_all() -> SearchAll:
    """Runs a search to its last page, following ``next_page_id``."""

    async def run(store: Store, query: EventQuery, *, limit: int = 100, order: str = "TIMESTAMP") -> list[EventRecord]:
        found: list[EventRecord] = []
        page_id = None
        while True:
            page = await store.search(query, limit=limit, page_id=page_id, order=order)  # type: ignore[arg-type]
            found.extend(page.items)
            if page.next_page_id is None:
                return found
            assert page.items, "a page with a next_page_id is never empty"
            page_id = page.next_page_id

    return run
