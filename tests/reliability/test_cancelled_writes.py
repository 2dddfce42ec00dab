"""The runtime's writes that take several steps (a status: its row and its event; usage; a
sub-agent's start and end; a whole run) are cancelled at every await in turn, on both stores:
after each, the row equals the last stored status event, every tool call has its observation,
every sub-agent that started has finished, and the next write works."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, AsyncIterator

import pytest

from taskwire.bus import open_bus
from taskwire.events import Usage, parse_event
from taskwire.hooks import Hooks
from taskwire.runtime import Runtime
from taskwire.runtime.conversation import ConversationHost
from taskwire.store import EventQuery, Store, open_store
from tests.api.helpers import scripted_agent
from tests.faults import CancelAt, cancel_at_every_await
from tests.servers import isolated_settings
from tests.services import postgres_schema_url

REPO = Path(__file__).resolve().parents[2]
DEMO = str(REPO / "config/demo/two_subagents.yaml")


@pytest.fixture(params=["sqlite", "postgres"])
async def runtime(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Runtime]:
    url = f"sqlite:///{tmp_path}/taskwire.db" if request.param == "sqlite" else postgres_schema_url(request)
    settings = isolated_settings(tmp_path, database_url=url, llm_script=DEMO)
    store = open_store(url)
    await store.open()
    bus = open_bus(None)
    await bus.start()
    runtime = Runtime(settings, store, bus, Hooks.with_builtins(settings))
    try:
        yield runtime
    finally:
        await runtime.close()
        await bus.close()
        await store.close()


async def events_of(store: Store, root_id: str) -> list[tuple[str, Any]]:
    found, page_id = [], None
    while True:
        page = await store.search(EventQuery(root_id=root_id), page_id=page_id)
        found += [(r.conversation_id, parse_event(r.json)) for r in page.items]
        page_id = page.next_page_id
        if page_id is None:
            return found


async def assert_whole(store: Store, root_id: str) -> None:
    """Nothing of the tree is half done (see the module docstring)."""
    await store.flush()
    events = await events_of(store, root_id)
    for record in await store.tree(root_id):
        stream = [e for cid, e in events if cid == record.id]
        statuses = [e.value for e in stream if e.kind == "ConversationStateUpdateEvent" and e.key == "status"]
        assert record.status == (statuses[-1] if statuses else "idle"), f"{record.id}: {record.status} vs {statuses}"
        usages = [e.value for e in stream if e.kind == "ConversationStateUpdateEvent" and e.key == "usage"]
        if usages:  # the totals (``added`` beside them is what the last call added)
            totals = record.usage.model_dump()
            assert totals == {key: usages[-1][key] for key in totals}
        calls = {e.tool_call_id for e in stream if e.kind == "ActionEvent"}
        closed = {e.tool_call_id for e in stream if e.kind == "ObservationEvent"}
        assert calls <= closed, f"{record.id}: calls left open: {calls - closed}"
        if not record.is_root:
            kinds = [e.kind for e in stream]
            assert kinds.count("SubagentStartedEvent") == 1, kinds
            assert kinds.count("SubagentFinishedEvent") == 1, f"{record.id} never finished: {kinds}"
            assert record.subagent_status in ("completed", "cancelled", "error"), record.subagent_status


async def new_host(runtime: Runtime) -> ConversationHost:
    record = await runtime.create(scripted_agent(DEMO), run=False)
    return await runtime.host(record.id)


async def test_a_cancelled_status_change_leaves_row_and_stream_agreeing(runtime: Runtime) -> None:
    host = await new_host(runtime)
    statuses = itertools.cycle(["running", "paused"])

    def write(n: int) -> Any:
        return host.set_status(next(statuses))

    async def check(n: int, completed: bool) -> None:
        await assert_whole(runtime.store, host.root_id)
        stored = await runtime.store.get_conversation(host.conversation_id)
        assert stored is not None and stored.status == host.record.status

    assert await cancel_at_every_await(write, check) >= 2


async def test_cancelled_usage_leaves_row_and_stream_agreeing(runtime: Runtime) -> None:
    host = await new_host(runtime)

    def write(n: int) -> Any:
        return host.add_usage(Usage(input_tokens=n, output_tokens=1))

    async def check(n: int, completed: bool) -> None:
        await assert_whole(runtime.store, host.root_id)
        assert host.record.usage.output_tokens == n  # every one counted, cancelled or not

    assert await cancel_at_every_await(write, check) >= 2


async def test_a_cancelled_subagent_start_or_finish_leaves_it_started_and_finished(runtime: Runtime) -> None:
    host = await new_host(runtime)

    def start(n: int) -> Any:
        return host.start_subagent(f"call-{n}", subagent_type="general-purpose", description=f"job {n}")

    async def check_started(n: int, completed: bool) -> None:
        for child in list(host.children.values()):  # the ones that started whole, not cancelled
            await host.finish_subagent(child, status="completed", result="done")
        await assert_whole(runtime.store, host.root_id)

    assert await cancel_at_every_await(start, check_started) >= 2
    children: dict[int, ConversationHost] = {}

    async def start_then_finish(n: int) -> None:
        children[n] = await host.start_subagent(f"end-{n}", subagent_type="general-purpose", description="ends")
        await host.finish_subagent(children[n], status="completed", result=f"result {n}")

    async def check_finished(n: int, completed: bool) -> None:
        await assert_whole(runtime.store, host.root_id)
        assert not host.children

    assert await cancel_at_every_await(start_then_finish, check_finished) >= 3


async def test_a_run_cancelled_at_any_await_ends_paused_with_every_call_closed(runtime: Runtime) -> None:
    hosts = {1: await new_host(runtime)}

    async def drive(n: int) -> None:
        host = hosts[n]
        host.deliver_user_message("go")
        await runtime.drive(host)

    async def check(n: int, completed: bool) -> None:
        host = hosts[n]
        await assert_whole(runtime.store, host.root_id)
        assert host.record.status in (("finished",) if completed else ("paused", "finished"))
        assert not host.children
        hosts[n + 1] = await new_host(runtime)  # the next write works: a new run on the same store

    # The demo: a command, then two sub-agents in parallel each running one, then finish.
    # (The root's own awaits: its sub-agents' run in their tasks, tried in the next test.)
    assert await cancel_at_every_await(drive, check) >= 10


async def test_subagents_cancelled_at_any_await_of_their_run_end_whole(runtime: Runtime) -> None:
    """As ``POST .../subagents/{id}/cancel`` landing at each await of a sub-agent's run."""
    hosts = {1: await new_host(runtime)}
    attempts: list[CancelAt] = []
    run_child = runtime.tasks._run_child

    async def drive(n: int) -> None:
        async def cancelled_at_n(child: ConversationHost) -> Any:
            attempts.append(CancelAt(run_child(child), n))
            return await attempts[-1]

        runtime.tasks._run_child = cancelled_at_n  # each sub-agent's run task, cancelled at its n-th await
        attempts.clear()
        hosts[n].deliver_user_message("go")
        await runtime.drive(hosts[n])

    async def check(n: int, completed: bool) -> None:
        assert completed  # the parent goes on when a sub-agent is cancelled
        await assert_whole(runtime.store, hosts[n].root_id)
        assert hosts[n].record.status == "finished"
        hosts[n + 1] = await new_host(runtime)

    try:
        for n in itertools.count(1):
            await drive(n)
            await check(n, True)
            if not any(attempt.injected for attempt in attempts):
                break
        assert n >= 5
    finally:
        runtime.tasks._run_child = run_child
