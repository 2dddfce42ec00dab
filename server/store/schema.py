"""Schema versions, shared by every store backend.

Each backend keeps an ordered list of migrations; migration ``n`` (1-based) brings the
database from version ``n - 1`` to ``n``. A ``schema_version`` table holds the version the
database is at. Opening a database applies the missing migrations, and refuses one written
by a newer taskwire instead of guessing at tables it does not know.
"""

from __future__ import annotations

from typing import Sequence

EVENT_INDEXES = """
CREATE UNIQUE INDEX events_by_id ON events (id);
CREATE UNIQUE INDEX events_by_seq ON events (tree, seq);
CREATE INDEX events_by_stream ON events (tree, conversation_id, seq);
CREATE INDEX events_by_stream_kind ON events (tree, conversation_id, kind, seq);
CREATE INDEX events_by_kind ON events (tree, kind, seq);
CREATE INDEX events_by_source ON events (tree, source, seq);
CREATE INDEX events_by_tool_use ON events (tree, parent_tool_use_id, seq)
    WHERE parent_tool_use_id IS NOT NULL;
CREATE INDEX events_by_subagent ON events (tree, subagent_id, seq)
    WHERE subagent_id IS NOT NULL;
"""
"""The indexes ``filters.py``'s searches rely on, the same in every backend: each starts with
the tree and the filter's column and ends with ``seq``, so a filtered page is read in ``seq``
order from where it starts and stops after its rows (plain SQL: ``;``-separated statements).
Each backend's first migration creates them: a change here needs a new migration too."""


class SchemaVersionError(RuntimeError):
    """The database was written by a newer taskwire than this one."""


def pending_migrations(found: int, migrations: Sequence[str], *, where: str) -> Sequence[str]:
    """The migrations to apply to a database at version ``found`` (0 = empty).

    Raises ``SchemaVersionError`` when ``found`` is newer than the code knows.
    """
    known = len(migrations)
    if found > known:
        raise SchemaVersionError(
            f"the database at {where} has schema version {found}, but this taskwire knows "
            f"versions up to {known}: upgrade taskwire, or point OH_DATABASE_URL elsewhere"
        )
    return migrations[found:]
