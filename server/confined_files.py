"""Reading a file a request names, without trusting the name.

A request may name a file for the server to read: a scripted model's script, a recorded
transcript to replay. The name is a client's, so the file must resolve (symbolic links
followed) under the roots the operator allows, be a regular file (a FIFO or a device would
block or never end) of a bounded size, and hold UTF-8 text; an error says which of these
failed and never quotes what the file holds.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Callable, Union

Roots = Union[list[Path], Callable[[], list[Path]], None]
"""Where a named file may lie: a list, a function giving it (called only when a file is read:
resolving the roots touches the file system), or ``None`` for anywhere (the operator's own)."""
Refusal = Callable[[str, str], Exception]
"""Makes the error to raise from a message and a code (``<what>_outside_roots``,
``<what>_not_found``, ``<what>_unreadable``)."""


def read_confined(path: Path, roots: Roots, *, what: str, limit: int, hint: str, refuse: Refusal) -> str:
    """The text of the file at ``path``, read only if it lies under one of ``roots`` (any
    file when ``roots`` is ``None``: the operator's own setting) and is a regular UTF-8 file
    of at most ``limit`` bytes. ``what`` names it in errors, ``hint`` says what to do instead
    of naming a file outside the roots."""
    unreadable = f"{what}_unreadable"
    try:
        resolved = path.resolve()  # a link out of the roots stays out
    except (OSError, ValueError, RuntimeError):  # a NUL in the name, a loop of links
        raise refuse(f"{what} {path!r} cannot be resolved", unreadable) from None
    if callable(roots):
        roots = roots()
    if roots is not None and not any(resolved.is_relative_to(root.resolve()) for root in roots):
        raise refuse(
            f"{what} {path} is outside the config folder and the workspace roots; {hint}", f"{what}_outside_roots"
        )
    try:
        info = os.stat(resolved)
    except FileNotFoundError:
        raise refuse(f"{what} file not found: {path}", f"{what}_not_found") from None
    except OSError as exc:
        raise refuse(f"cannot read {what} {path}: {exc.strerror}", unreadable) from None
    if not stat.S_ISREG(info.st_mode):
        raise refuse(f"{what} {path} is not a regular file", unreadable)
    if info.st_size > limit:
        raise refuse(f"{what} {path} is over {limit} bytes", unreadable)
    try:
        with open(resolved, "rb") as file:
            data = file.read(limit + 1)
    except OSError as exc:
        raise refuse(f"cannot read {what} {path}: {exc.strerror}", unreadable) from None
    if len(data) > limit:  # it grew since the stat
        raise refuse(f"{what} {path} is over {limit} bytes", unreadable)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise refuse(f"{what} {path} is not UTF-8 text", unreadable) from None
