"""How a taskwire tool call looks to an ACP client: title, kind, content, locations.

No I/O. Paths are joined, never resolved: the projection does not touch the file system.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any, get_args

from pydantic import TypeAdapter, ValidationError

from acp.schema import ContentToolCallContent, FileEditToolCallContent, ToolKind

from .toolcalls import text_block, text_of

ACP_KINDS = frozenset(get_args(ToolKind))
"""The ``kind`` values ACP v1 knows; anything else is sent as ``other``."""

AGENT_TOOL_NAME = "Agent"
"""Claude Code's sub-agent tool: ``_meta.claudeCode.toolName`` on a ``task`` call, so clients that
nest Claude Code's sub-agents (Zed, claude-agent-acp readers) nest taskwire's the same way."""

FILE_COMMANDS = {"view": ("read", "Read"), "create": ("edit", "Create"), "str_replace": ("edit", "Edit"), "insert": ("edit", "Insert into")}
TITLE_LIMIT = 200

_content_blocks: TypeAdapter[ContentToolCallContent | FileEditToolCallContent] = TypeAdapter(
    ContentToolCallContent | FileEditToolCallContent
)


@dataclass(slots=True)
class CallView:
    """A native tool call as ACP shows it."""

    title: str
    kind: str
    content: list[dict[str, Any]] | None = None
    """Shown while the call runs (the command's prompt, a diff, a thought)."""
    locations: list[dict[str, Any]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    """Extra ``_meta`` on every update of the call (``claudeCode.toolName`` for ``task``)."""
    keep_content: bool = False
    """At the end, keep ``content`` and add the result after it (a diff, a thought); otherwise
    the result replaces it."""


def native_call(tool_name: str, arguments: dict[str, Any], workspace: str | None) -> CallView:
    """The view of a call of one of taskwire's tools (or any tool a hook added)."""
    if tool_name == "terminal":
        return CallView(one_line(arguments.get("command")) or "Terminal", "execute")
    if tool_name == "file_editor":
        return _file_call(arguments, workspace)
    if tool_name == "think":
        thought = arguments.get("thought")
        return CallView("Think", "think", [text_block(thought)] if isinstance(thought, str) and thought else None, keep_content=True)
    if tool_name == "task":
        prompt = arguments.get("prompt")
        return CallView(
            one_line(arguments.get("description")) or "Sub-agent",
            "other",
            [text_block(prompt)] if isinstance(prompt, str) and prompt else None,
            meta={"claudeCode": {"toolName": AGENT_TOOL_NAME}},
        )
    return CallView(tool_name or "Tool call", "other")


def _file_call(arguments: dict[str, Any], workspace: str | None) -> CallView:
    command, path = arguments.get("command"), arguments.get("path")
    kind, verb = FILE_COMMANDS.get(command, ("other", f"file_editor {command}")) if isinstance(command, str) else ("other", "file_editor")
    shown = path if isinstance(path, str) and path else ""
    title = one_line(f"{verb} {shown}".strip())
    where = absolute(path, workspace)
    if where is None:
        return CallView(title, kind)
    content = None
    if command == "create" and isinstance(arguments.get("file_text"), str):
        content = [{"type": "diff", "path": where, "newText": arguments["file_text"]}]
    elif command == "str_replace" and isinstance(arguments.get("old_str"), str) and isinstance(arguments.get("new_str"), str):
        content = [{"type": "diff", "path": where, "oldText": arguments["old_str"], "newText": arguments["new_str"]}]
    return CallView(title, kind, content, [{"path": where}], keep_content=content is not None)


def absolute(path: Any, workspace: str | None) -> str | None:
    """``path`` made absolute against the workspace (ACP wants absolute paths), or ``None``."""
    if not isinstance(path, str) or not path:
        return None
    if posixpath.isabs(path):
        return posixpath.normpath(path)
    return posixpath.normpath(posixpath.join(workspace, path)) if workspace else None


def one_line(value: Any) -> str:
    """A title: the first line of ``value``, cut to ``TITLE_LIMIT`` characters."""
    if not isinstance(value, str):
        return ""
    line = value.strip().split("\n", 1)[0]
    return line if len(line) <= TITLE_LIMIT else line[: TITLE_LIMIT - 1] + "…"


def acp_kind(kind: Any) -> str | None:
    """A bridged peer's kind as ACP v1 can carry it."""
    if not isinstance(kind, str) or not kind:
        return None
    return kind if kind in ACP_KINDS else "other"


def peer_content(blocks: Any) -> list[dict[str, Any]] | None:
    """A bridged peer's tool-call content, kept where it is valid ACP: text and diffs pass, a
    terminal block (the peer's terminal, unknown to our client) or anything else becomes its
    text, or goes."""
    if not isinstance(blocks, list):
        return None
    kept: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, dict) and block.get("type") in ("content", "diff"):
            try:
                _content_blocks.validate_python(block)
            except ValidationError:
                pass
            else:
                kept.append(block)
                continue
        text = text_of(block)
        if text:
            kept.append(text_block(text))
    return kept
