"""``file_editor``: view, create and edit files, confined to the workspace.

The file work runs in a thread (the event loop serves every other conversation meanwhile). A
view streams the file, keeping at most the output bound (head and tail) whatever its size; an
edit reads the whole file, so files over ``MAX_EDIT_BYTES`` are refused (the terminal tool
edits those).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from ...errors import ToolError
from .base import ToolContext, ToolResult
from .terminal import BoundedOutput

MAX_EDIT_BYTES = 8 * 1024 * 1024
"""The largest file ``str_replace`` / ``insert`` may edit (they read it whole)."""


class FileEditorTool:
    name: ClassVar[str] = "file_editor"
    description: ClassVar[str] = (
        "View, create and edit text files in the workspace. Commands: view (a file with line "
        "numbers, or a directory listing), create (write file_text), str_replace (replace the "
        "unique old_str with new_str), insert (insert new_str after line insert_line)."
    )

    class Arguments(BaseModel):
        command: Literal["view", "create", "str_replace", "insert"]
        path: str = Field(description="A path in the workspace (relative, or absolute inside it).")
        file_text: str | None = Field(default=None, description="For create: the content.")
        old_str: str | None = Field(default=None, description="For str_replace: the text to replace.")
        new_str: str | None = Field(default=None, description="For str_replace and insert.")
        insert_line: int | None = Field(default=None, ge=0, description="For insert: after this line.")
        view_range: list[int] | None = Field(default=None, description="For view: [first, last] line.")

    async def run(self, ctx: ToolContext, args: Arguments) -> ToolResult:
        path = confine(ctx.workspace, args.path)
        command = getattr(self, f"_{args.command}")
        return await asyncio.to_thread(command, path, args, ctx.workspace)

    def _view(self, path: Path, args: Arguments, root: Path) -> ToolResult:
        if path.is_dir():
            entries = sorted(p.relative_to(root).as_posix() + ("/" if p.is_dir() else "") for p in path.iterdir())
            return ToolResult("\n".join(entries) or "(empty directory)")
        first, last = 1, None
        if args.view_range:
            if len(args.view_range) != 2:
                raise ToolError("view_range must be [first, last]")
            first, last = max(1, args.view_range[0]), args.view_range[1]
        _must_be_file(path)
        output = BoundedOutput()
        with path.open(errors="replace", newline=None) as lines:
            for n, line in enumerate(lines, start=1):
                if last is not None and n > last:
                    break
                if n >= first:
                    output.feed(f"{'' if n == first else chr(10)}{n:6}\t{line.rstrip(chr(10))}".encode())
        return ToolResult(output.text())

    def _create(self, path: Path, args: Arguments, root: Path) -> ToolResult:
        if args.file_text is None:
            raise ToolError("create needs file_text")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(args.file_text)
        return ToolResult(f"Created {path.relative_to(root).as_posix()}")

    def _str_replace(self, path: Path, args: Arguments, root: Path) -> ToolResult:
        if args.old_str is None or args.new_str is None:
            raise ToolError("str_replace needs old_str and new_str")
        text = _read(path)
        found = text.count(args.old_str)
        if found != 1:
            raise ToolError(f"old_str must occur exactly once in {args.path}; it occurs {found} times")
        path.write_text(text.replace(args.old_str, args.new_str))
        return ToolResult(f"Edited {path.relative_to(root).as_posix()}")

    def _insert(self, path: Path, args: Arguments, root: Path) -> ToolResult:
        if args.insert_line is None or args.new_str is None:
            raise ToolError("insert needs insert_line and new_str")
        lines = _read(path).splitlines(keepends=True)
        if args.insert_line > len(lines):
            raise ToolError(f"insert_line {args.insert_line} is past the end ({len(lines)} lines)")
        new = args.new_str if args.new_str.endswith("\n") else args.new_str + "\n"
        lines.insert(args.insert_line, new)
        path.write_text("".join(lines))
        return ToolResult(f"Inserted into {path.relative_to(root).as_posix()} after line {args.insert_line}")


def confine(root: Path, path: str) -> Path:
    """Resolve ``path`` inside ``root``; anything outside (``..``, symlinks, absolute) is refused."""
    if "\x00" in path:
        raise ToolError(f"path {path!r} holds a NUL character; no file has such a name")
    root = root.resolve()
    try:
        candidate = (root / path).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a name too long
        raise ToolError(f"path {path!r} cannot be resolved: {exc}") from exc
    if candidate != root and root not in candidate.parents:
        raise ToolError(f"path {path!r} is outside the workspace {root}; only paths inside it are allowed")
    return candidate


def _must_be_file(path: Path) -> None:
    if not path.is_file():
        raise ToolError(f"no such file: {path.name}")


def _read(path: Path) -> str:
    """A file to edit, whole."""
    _must_be_file(path)
    _editable(path)
    return path.read_text(errors="replace")


def _editable(path: Path) -> None:
    if (size := path.stat().st_size) > MAX_EDIT_BYTES:
        raise ToolError(
            f"{path.name} is {size / 1_048_576:.1f} MB; file_editor edits files up to "
            f"{MAX_EDIT_BYTES // 1_048_576} MB (view it in ranges, or edit it with the terminal)"
        )
