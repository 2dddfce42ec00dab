"""Page tokens are signed with a key the database keeps: a server (or a replica on the same
database) accepts its own, and nothing else, whatever a forged one holds."""

from __future__ import annotations

import base64
import json

import pytest

from taskwire.errors import InvalidPageId
from taskwire.events import MessageEvent
from taskwire.store import Store
from taskwire.store.base import ConversationRecord, EventQuery
from taskwire.store.pagination import encode_page_id
from tests.store.conftest import OpenStore


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def hostile_page_ids(real: str) -> list[str]:
    """What an attacker sends instead of a token this server made."""
    payload, mac = real.split(".")
    return [
        b64(b"[" * 5000),  # deeply nested JSON, bare
        f"{b64(b'[' * 5000)}.{mac}",  # ... with a mac copied from a real token
        b64(json.dumps({"p": 2**63, "h": "0" * 16}).encode()),  # the old unsigned form
        f"{b64(str(2**63).encode())}.{mac}",  # a position past any seq
        f"{payload}.{b64(b'x' * 16)}",  # the right payload, a wrong mac
        f"{payload}.{mac[:-2]}",  # a cut mac
        f"{payload}.{mac[:-1]}{'B' if mac[-1] == 'A' else 'A'}",  # another spelling of (nearly) the same mac
        "garbage", "", ".", "a.b.c", "é.é", "%00", "A" * 5000,
    ]


async def test_a_forged_or_tampered_event_page_id_is_refused(store: Store) -> None:
    for n in range(4):
        await store.append("r", "r", MessageEvent(content=str(n)))
    query = EventQuery(root_id="r")
    real = (await store.search(query, limit=1)).next_page_id
    assert real is not None
    for page_id in hostile_page_ids(real):
        with pytest.raises(InvalidPageId):
            await store.search(query, limit=1, page_id=page_id)
    assert len((await store.search(query, limit=1, page_id=real)).items) == 1


async def test_a_forged_or_tampered_conversation_page_id_is_refused(store: Store) -> None:
    for n in range(3):
        await store.create_conversation(ConversationRecord(id=f"c{n}", root_id=f"c{n}"))
    real = (await store.search_conversations(limit=1)).next_page_id
    assert real is not None
    for page_id in hostile_page_ids(real):
        with pytest.raises(InvalidPageId):
            await store.search_conversations(limit=1, page_id=page_id)


async def test_a_token_signed_with_another_key_is_refused(store: Store) -> None:
    for n in range(3):
        await store.append("r", "r", MessageEvent(content=str(n)))
    real = (await store.search(EventQuery(root_id="r"), limit=1)).next_page_id
    assert real is not None
    payload = base64.urlsafe_b64decode(real.split(".")[0] + "==")
    forged = encode_page_id(b"not the server's key", "events:TIMESTAMP", "", json.loads(payload))
    with pytest.raises(InvalidPageId):
        await store.search(EventQuery(root_id="r"), limit=1, page_id=forged)


async def test_every_store_on_one_database_accepts_the_others_tokens(reopen: OpenStore) -> None:
    first = await reopen()
    for n in range(3):
        await first.append("r", "r", MessageEvent(content=str(n)))
    token = (await first.search(EventQuery(root_id="r"), limit=1)).next_page_id
    second = await reopen()  # a replica, or the same server restarted
    page = await second.search(EventQuery(root_id="r"), limit=1, page_id=token)
    assert [r.seq for r in page.items] == [2]
