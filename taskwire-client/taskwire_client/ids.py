"""Identifiers: time-ordered ids for events, random ids for conversations.

Event ids are UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, 12 bits of sub-millisecond
time, 62 random bits. Ids made later sort later, so the store's unique index on them grows at
its right edge like the ``seq`` indexes do. With random (v4) ids every append wrote a random
page of that index, which cost more than all the other indexes together (about three times
the whole append; see BENCHMARKS.md). They are still UUID strings to clients.

The random bits come from ``random`` (seeded from the OS, reseeded in a forked child), not
from ``os.urandom``: event ids are names, not secrets (anyone who can read an event can read
its id), and ``os.urandom`` is a system call that lets other threads take the interpreter
lock on every event, which made it the costliest line of an append.
"""

from __future__ import annotations

import random
import time
import uuid

_VERSION_7 = 0x7 << 76
_VARIANT = 0b10 << 62


def new_event_id() -> str:
    """A fresh UUIDv7 string: later ids sort after earlier ones (to the 1/4096 ms)."""
    ms, ns = divmod(time.time_ns(), 1_000_000)
    value = ms << 80 | _VERSION_7 | (ns * 4096 // 1_000_000) << 64 | _VARIANT
    value |= random.getrandbits(62)
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def new_id() -> str:
    """A fresh uuid4 string (conversations, sessions: random, nothing to order)."""
    return str(uuid.uuid4())
