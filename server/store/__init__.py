"""The durable log and conversation records, behind ``EventStore`` / ``ConversationStore``."""

from __future__ import annotations

from .base import (
    ConversationPage,
    ConversationRecord,
    EventPage,
    EventQuery,
    Store,
)

__all__ = ["ConversationPage", "ConversationRecord", "EventPage", "EventQuery", "Store", "open_store"]


def open_store(url: str, *, timeout: float = 10.0) -> Store:
    """A store for ``url`` (``sqlite:///path`` or ``postgresql://...``), not yet opened. A
    write waits at most about ``timeout`` seconds for the database (SQLite's lock, a
    PostgreSQL connection) before it fails with ``StoreUnavailable``."""
    if url.startswith("sqlite:"):
        from .sqlite import SQLiteStore

        return SQLiteStore(url, timeout=timeout)
    if url.startswith(("postgresql:", "postgres:")):
        from .postgres import PostgresStore

        return PostgresStore(url, timeout=timeout)
    raise ValueError(f"unsupported OH_DATABASE_URL {url!r}: use sqlite:///path or postgresql://...")
