"""Which SQLite errors mean the database, not the request, is at fault."""

from __future__ import annotations

import sqlite3

# SQLite's primary result codes that mean the database, not the request, is at fault.
_FAULTS = {
    5: "SQLITE_BUSY", 6: "SQLITE_LOCKED", 7: "SQLITE_NOMEM", 8: "SQLITE_READONLY", 10: "SQLITE_IOERR",
    11: "SQLITE_CORRUPT", 13: "SQLITE_FULL", 14: "SQLITE_CANTOPEN", 15: "SQLITE_PROTOCOL", 26: "SQLITE_NOTADB",
}


def fault(exc: BaseException) -> str | None:
    """Why ``exc`` means the database cannot be used now (a full or read-only disk, a lock held
    too long, a closed connection), or ``None`` when it is about the request (a duplicate id)."""
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        if code is not None and code & 0xFF in _FAULTS:
            return f"{_FAULTS[code & 0xFF]}: {exc}"
        if isinstance(exc, sqlite3.ProgrammingError) and "closed" in str(exc):
            return str(exc)
        return None
    if isinstance(exc, ValueError) and str(exc) == "Connection closed":  # aiosqlite's
        return "the connection was closed"
    if isinstance(exc, OSError):  # the folder cannot be made, the file cannot be opened
        return f"{type(exc).__name__}: {exc}"
    return None
