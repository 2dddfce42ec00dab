"""Several real ``taskwire serve`` processes sharing PostgreSQL and Redis.

Each replica is its own process on its own port, with the settings a deployment gives it
(``OH_DATABASE_URL``, ``OH_REDIS_URL``, ``OH_REPLICA_ID``, ...): nothing is shared in memory,
so whatever one replica learns of another's conversation crossed PostgreSQL or Redis.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import websockets

from tests.servers import ServerProcess as Replica
from tests.services import REDIS_URL, need_redis, postgres_schema_url, private_redis, wait_until

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("slow_two_subagents.yaml")
WAIT = 90.0
"""Seconds any wait may take before the test fails: generous, for a loaded machine."""


@dataclass
class Cluster:
    replicas: list[Replica]
    database_url: str
    redis_url: str

    @property
    def a(self) -> Replica:
        return self.replicas[0]

    @property
    def b(self) -> Replica:
        return self.replicas[1]


def replica_env(database_url: str, redis_url: str, **extra: str) -> dict[str, str]:
    """The settings every replica gets (the same a deployment gives them)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("OH_")}
    env.update(
        OH_DATABASE_URL=database_url,
        OH_REDIS_URL=redis_url,
        OH_FORWARD_SUBAGENT_EVENTS="true",
        OH_LLM_API="scripted",
        OH_LLM_SCRIPT=str(SCRIPT),
        OH_LEASE_SECONDS="3",  # a dead owner's conversations are free three seconds on
        OH_CONFIG_FILE=str(REPO / "tests" / "scaleout" / "no-such-file.toml"),
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


async def start_cluster(folder: Path, database_url: str, redis_url: str, count: int = 2) -> Cluster:
    env = replica_env(database_url, redis_url)
    replicas = [Replica(name, folder, env) for name in ("replica-a", "replica-b", "replica-c")[:count]]
    cluster = Cluster(replicas, database_url, redis_url)
    await asyncio.gather(*(replica.start() for replica in replicas))
    return cluster


async def stop_cluster(cluster: Cluster) -> None:
    for replica in cluster.replicas:
        await replica.stop()
        await replica.client.aclose()


@pytest.fixture
def database_url(request: pytest.FixtureRequest) -> str:
    return postgres_schema_url(request)


@pytest.fixture
async def cluster(database_url: str, tmp_path: Path) -> AsyncIterator[Cluster]:
    """Two replicas on the shared PostgreSQL (a schema of the test's own) and Redis."""
    need_redis()
    running = await start_cluster(tmp_path, database_url, REDIS_URL)
    try:
        yield running
    finally:
        await stop_cluster(running)


@pytest.fixture
async def cluster_with_own_redis(database_url: str, tmp_path: Path) -> AsyncIterator[tuple[Cluster, Any]]:
    """Two replicas on a private ``redis-server`` that the test may kill and restart."""
    async with private_redis(tmp_path) as redis:
        running = await start_cluster(tmp_path, database_url, redis.url)
        try:
            yield running, redis
        finally:
            await stop_cluster(running)


@dataclass
class SocketClient:
    """A WebSocket client of one replica, collecting every frame it receives."""

    frames: list[dict[str, Any]] = field(default_factory=list)
    closed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def events(self) -> list[dict[str, Any]]:
        """Every event after the ``full_state`` frame, streaming deltas left out."""
        return [f for f in self.frames[1:] if f["kind"] != "StreamingDeltaEvent"]

    def saw(self, predicate: Any) -> bool:
        return any(predicate(event) for event in self.events)

    async def wait_for(self, predicate: Any, what: str) -> None:
        await wait_until(lambda: self.saw(predicate), timeout=WAIT, what=what)


async def follow(replica: Replica, conversation_id: str, client: SocketClient) -> None:
    """Read ``replica``'s socket for the conversation into ``client`` until it closes."""
    try:
        async with websockets.connect(f"{replica.ws_url}/sockets/events/{conversation_id}") as socket:
            async for message in socket:
                client.frames.append(json.loads(message))
    finally:
        client.closed.set()


def is_finished(event: dict[str, Any]) -> bool:
    """The root's last status event of a run that ended."""
    return (
        event["kind"] == "ConversationStateUpdateEvent" and event.get("key") == "status"
        and event.get("value") in ("finished", "error") and "subagent_id" not in event
    )


async def start_run(cluster: Cluster) -> str:
    """Start the scenario on replica A (which so owns it); returns the conversation id."""
    response = await cluster.a.client.post("/api/conversations", json={"initial_message": "Run the demo.", "run": True})
    assert response.status_code == 201, response.text
    return response.json()["id"]


@asynccontextmanager
async def watched_run(cluster: Cluster) -> AsyncIterator[tuple[str, SocketClient]]:
    """The scenario running on replica A, watched by a socket client of replica B that has
    already received a forwarded sub-agent event."""
    conversation_id = await start_run(cluster)
    client = SocketClient()
    reader = asyncio.create_task(follow(cluster.b, conversation_id, client))
    try:
        await client.wait_for(lambda e: e["kind"] == "SubagentStartedEvent", "a forwarded sub-agent event on B")
        yield conversation_id, client
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
