"""Timestamps as the wire writes them: UTC, ISO 8601 with a ``Z``, microseconds kept."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated

from pydantic import PlainSerializer


def _utc_z(value: datetime) -> str:
    # ISO 8601 in UTC with a `Z`, microseconds kept so timestamps sort like `seq`.
    # isoformat is twice as fast as strftime; its "+00:00" becomes the "Z".
    return value.astimezone(timezone.utc).isoformat(timespec="microseconds")[:-6] + "Z"


Timestamp = Annotated[datetime, PlainSerializer(_utc_z, return_type=str)]


def utc_now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(timezone.utc)
