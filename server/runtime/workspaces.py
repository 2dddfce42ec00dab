"""Where a conversation's workspace may lie: the one rule, for every way one is named.

A workspace is a folder under ``OH_WORKSPACE_PATH`` or under one of the roots listed in
``OH_WORKSPACE_ROOTS``. A relative name is taken from ``OH_WORKSPACE_PATH``; an absolute one
must resolve (symlinks followed) inside a root. Anything else, and a name that no file system
would take (a NUL, a part over 255 bytes, over 4096 characters in all), is refused with
``InvalidWorkspace`` (400) before anything is created: the tools then confine themselves to the
folder (``tools/file_editor.py``).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InvalidWorkspace
from ..settings import Settings

MAX_PATH = 4096
"""Characters a workspace name may hold (Linux's ``PATH_MAX``)."""
MAX_PART = 255
"""Bytes one part of it may hold (``NAME_MAX``)."""


def confined_path(settings: Settings, requested: str, what: str = "workspace") -> Path:
    """The folder ``requested`` names, resolved, if it lies under a workspace root (it need
    not exist). Raises ``InvalidWorkspace`` otherwise."""
    _check_name(requested, what)
    path = Path(requested)
    if not path.is_absolute():
        path = settings.workspace_path / path
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop, an unreadable folder
        raise InvalidWorkspace(f"{what} {_shown(requested)} cannot be resolved: {_reason(exc)}") from exc
    roots = settings.workspace_roots_resolved()
    if not any(resolved == root or root in resolved.parents for root in roots):
        listed = ", ".join(str(root) for root in roots)
        raise InvalidWorkspace(
            f"{what} {_shown(requested)} lies outside the workspace roots ({listed}); "
            "name a folder under OH_WORKSPACE_PATH or one of OH_WORKSPACE_ROOTS"
        )
    if resolved.exists() and not resolved.is_dir():
        raise InvalidWorkspace(f"{what} {_shown(requested)} is not a folder")
    return resolved


def prepare_workspace(settings: Settings, requested: str | None, default_name: str, *, confined: bool = True) -> Path:
    """The workspace folder of a new conversation, created if needed: ``requested`` (checked
    by ``confined_path``; with ``confined`` false only its name is checked) or
    ``OH_WORKSPACE_PATH/<default_name>``."""
    if requested is None:
        folder = (settings.workspace_path / default_name).resolve()
    elif confined:
        folder = confined_path(settings, requested)
    else:
        _check_name(requested, "workspace")
        folder = Path(requested).resolve()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidWorkspace(f"workspace {_shown(str(folder))} cannot be created: {_reason(exc)}") from exc
    return folder


def check_workspace_file_names(names: list[str], what: str) -> None:
    """Files an agent spec names inside its workspace (``subagent_types``), as written: relative,
    and never climbing out with ``..``. Checked before the workspace is made."""
    for name in names:
        _check_name(name, what)
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise InvalidWorkspace(
                f"{what} {_shown(name)} must be a path relative to the conversation's workspace, inside it"
            )


def confine_workspace_files(folder: Path, names: list[str], what: str) -> None:
    """The same files once the workspace exists: each must resolve (symlinks followed) inside it."""
    for name in names:
        try:
            resolved = (folder / name).resolve()
        except (OSError, RuntimeError) as exc:
            raise InvalidWorkspace(f"{what} {_shown(name)} cannot be resolved: {_reason(exc)}") from exc
        if not resolved.is_relative_to(folder.resolve()):
            raise InvalidWorkspace(f"{what} {_shown(name)} leads outside the conversation's workspace")


def _check_name(requested: str, what: str) -> None:
    if not requested:
        raise InvalidWorkspace(f"{what} is empty; leave it out for a fresh folder")
    if "\x00" in requested:
        raise InvalidWorkspace(f"{what} holds a NUL character")
    if len(requested) > MAX_PATH:
        raise InvalidWorkspace(f"{what} is {len(requested)} characters long; at most {MAX_PATH}")
    try:
        too_long = any(len(part.encode()) > MAX_PART for part in requested.split("/"))
    except UnicodeEncodeError:
        raise InvalidWorkspace(f"{what} is not valid Unicode text (a lone surrogate)") from None
    if too_long:
        raise InvalidWorkspace(f"{what} has a part over {MAX_PART} bytes")


def _shown(name: str) -> str:
    return repr(name if len(name) <= 120 else name[:120] + "…")


def _reason(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
