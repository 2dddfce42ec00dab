"""What one taskwire process hosts: the store, the bus and the runtime on them.

``hosted(settings, hooks)`` opens them in order and closes them in reverse, whatever stops the
host (a shutdown, a cancelled start-up). The server's lifespan and ``taskwire acp`` (embedded)
both host through it, so they run conversations the same way.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import AsyncIterator

from ..bus import Bus, open_bus
from ..hooks import Hooks
from ..runtime import Runtime
from ..settings import Settings
from ..store import Store, open_store


@dataclass(frozen=True, slots=True)
class Services:
    """A running host."""

    settings: Settings
    hooks: Hooks
    store: Store
    bus: Bus
    runtime: Runtime


@asynccontextmanager
async def hosted(settings: Settings, hooks: Hooks) -> AsyncIterator[Services]:
    """Open the store and the bus, recover conversations a previous process left running,
    start the runtime; on exit stop every run (each is left ``paused``) and close them all."""
    settings.workspace_path.mkdir(parents=True, exist_ok=True)
    store = open_store(settings.resolved_database_url(), timeout=settings.store_timeout)
    await store.open()
    try:
        bus = open_bus(settings.redis_url)
        await bus.start()
        try:
            runtime = Runtime(settings, store, bus, hooks)
            try:
                await runtime.recover()
                runtime.start()
                yield Services(settings, hooks, store, bus, runtime)
            finally:
                await runtime.close()
        finally:
            await bus.close()
    finally:
        await store.close()
