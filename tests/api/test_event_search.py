"""Event search over REST: every filter, pagination in both orders, counts, get and batch get."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from taskwire.events import ActionEvent, MessageEvent, ObservationEvent
from tests.api.helpers import all_events, create, scripted_agent
from tests.servers import RunningServer

REPO = Path(__file__).resolve().parents[2]


async def seeded(server: RunningServer, n: int = 30) -> tuple[str, list[dict[str, Any]]]:
    """A conversation holding ``n`` tool round trips and a few messages, made through the runtime."""
    info = await create(server, agent=scripted_agent(str(REPO / "config/demo/hello.yaml")), run=False)
    cid = info["id"]
    for i in range(n):
        await server.runtime.emit(cid, ActionEvent(tool_name="terminal", tool_call_id=f"c{i}", arguments={"command": f"echo {i}"}))
        await server.runtime.emit(cid, ObservationEvent(tool_name="terminal", tool_call_id=f"c{i}", content=f"out-{i}"))
    await server.runtime.emit(cid, MessageEvent(role="user", source="user", content="Needle in the haystack"))
    return cid, await all_events(server, cid)


async def page_through(server: RunningServer, cid: str, **params: Any) -> list[dict[str, Any]]:
    return await all_events(server, cid, **params)


async def test_pagination_in_both_orders_returns_every_event_once(server: RunningServer) -> None:
    cid, events = await seeded(server)
    ascending, page_id = [], None
    while True:
        params: dict[str, Any] = {"limit": 7, **({"page_id": page_id} if page_id else {})}
        page = (await server.client.get(f"/api/conversations/{cid}/events/search", params=params)).json()
        assert len(page["items"]) <= 7
        ascending.extend(page["items"])
        page_id = page["next_page_id"]
        if not page_id:
            break
    descending, page_id = [], None
    while True:
        params = {"limit": 9, "sort_order": "TIMESTAMP_DESC", **({"page_id": page_id} if page_id else {})}
        page = (await server.client.get(f"/api/conversations/{cid}/events/search", params=params)).json()
        descending.extend(page["items"])
        page_id = page["next_page_id"]
        if not page_id:
            break
    assert [e["seq"] for e in ascending] == sorted(e["seq"] for e in events)
    assert [e["id"] for e in descending] == [e["id"] for e in reversed(ascending)]
    timestamps = [e["timestamp"] for e in ascending]
    assert timestamps == sorted(timestamps)


async def test_every_filter_narrows_search_and_count(server: RunningServer) -> None:
    cid, events = await seeded(server)

    async def check(expected: list[dict[str, Any]], **params: Any) -> None:
        found = await page_through(server, cid, **params)
        assert [e["id"] for e in found] == [e["id"] for e in expected], params
        count = (await server.client.get(f"/api/conversations/{cid}/events/count", params=params)).json()
        assert count == len(expected), params

    await check([e for e in events if e["kind"] == "ObservationEvent"], kind="ObservationEvent")
    await check([e for e in events if e["kind"] in ("ObservationEvent", "MessageEvent")], kind=["ObservationEvent", "MessageEvent"])
    await check([e for e in events if e["source"] == "user"], source="user")
    await check([e for e in events if "needle" in e.get("content", "").lower()], body="NEEDLE")
    await check([e for e in events if "out-1" in e.get("content", "")], body="out-1")
    middle = events[len(events) // 2]
    await check([e for e in events if e["seq"] > middle["seq"]], after_seq=middle["seq"])
    await check([e for e in events if e["timestamp"] >= middle["timestamp"]], timestamp__gte=middle["timestamp"])
    await check([e for e in events if e["timestamp"] < middle["timestamp"]], timestamp__lt=middle["timestamp"])
    later = (datetime.now(timezone.utc) + timedelta(hours=1)).isoformat()
    await check([], timestamp__gte=later)
    await check(
        [e for e in events if e["kind"] == "ActionEvent" and e["seq"] > middle["seq"]],
        kind="ActionEvent", after_seq=middle["seq"],
    )


async def test_bad_queries_are_rejected_with_a_reason(server: RunningServer) -> None:
    cid, _ = await seeded(server, n=3)
    base = f"/api/conversations/{cid}/events/search"
    for params, status, code in [
        ({"page_id": "not-a-page"}, 400, "invalid_page_id"),
        ({"page_id": "eyJzIjoxfQ"}, 400, "invalid_page_id"),
        ({"limit": 0}, 422, "invalid_request"),
        ({"limit": 101}, 422, "invalid_request"),
        ({"after_seq": "x"}, 422, "invalid_request"),
        ({"sort_order": "SIDEWAYS"}, 422, "invalid_request"),
        ({"timestamp__gte": "yesterday"}, 422, "invalid_request"),
        ({"source": "martian"}, 422, "invalid_request"),
        ({"subagent_id": "nobody"}, 404, "subagent_not_found"),
    ]:
        response = await server.client.get(base, params=params)
        assert response.status_code == status, params
        assert response.json()["code"] == code and response.json()["detail"], params
    # A page token from the other order is not silently reused.
    first = (await server.client.get(base, params={"limit": 2})).json()
    crossed = await server.client.get(base, params={"page_id": first["next_page_id"], "sort_order": "TIMESTAMP_DESC"})
    assert crossed.status_code == 400


async def test_get_and_batch_get_by_id(server: RunningServer) -> None:
    cid, events = await seeded(server, n=3)
    one = await server.client.get(f"/api/conversations/{cid}/events/{events[2]['id']}")
    assert one.status_code == 200 and one.json() == events[2]
    missing = await server.client.get(f"/api/conversations/{cid}/events/nope")
    assert missing.status_code == 404 and missing.json()["code"] == "event_not_found"
    batch = await server.client.get(
        f"/api/conversations/{cid}/events", params=[("ids", events[3]["id"]), ("ids", "nope"), ("ids", events[0]["id"])]
    )
    assert batch.json() == [events[3], None, events[0]]
    other = await create(server, agent=scripted_agent(str(REPO / "config/demo/hello.yaml")), run=False)
    foreign = await server.client.get(f"/api/conversations/{other['id']}/events/{events[2]['id']}")
    assert foreign.status_code == 404


async def test_body_finds_the_text_a_person_reads(server: RunningServer) -> None:
    """``body=`` as a new user tries it: words, not the JSON (docs/api.md, "Searching text")."""
    info = await create(server, agent=scripted_agent(str(REPO / "config/demo/hello.yaml")), run=False)
    cid = info["id"]
    said = {
        "quoted": MessageEvent(role="user", source="user", content='Say "double", not single'),
        "french": MessageEvent(content="Retour à l'École"),
        "greek": ObservationEvent(tool_name="terminal", tool_call_id="c1", content="ΣΊΣΥΦΟΣ again 🙂"),
        "path": ActionEvent(tool_name="file_editor", tool_call_id="c2", arguments={"command": "view", "path": "C:\\work\\100%_done"}),
    }
    for event in said.values():
        await server.runtime.emit(cid, event)

    async def found(term: str) -> list[str]:
        items = await page_through(server, cid, body=term)
        count = (await server.client.get(f"/api/conversations/{cid}/events/count", params={"body": term})).json()
        assert count == len(items), term
        names = {event.id: name for name, event in said.items()}
        return [names.get(item["id"], item["kind"]) for item in items]

    assert await found("role") == [] and await found("content") == [] and await found("arguments") == []
    assert await found('"double"') == ["quoted"]
    assert await found("école") == ["french"] and await found("ÉCOLE") == ["french"]
    assert await found("σίσυφος") == ["greek"] and await found("🙂") == ["greek"]
    assert await found("\\") == ["path"] and await found("100%_d") == ["path"] and await found("%") == ["path"]
    assert await found("FILE_EDITOR") == ["path"]
    assert await found("zzz-absent") == []
