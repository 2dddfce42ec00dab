"""The native agent's tools. Names and arguments are part of the contract (an LLM emits them)."""

from __future__ import annotations

from .base import Tool, ToolContext, ToolResult, parse_arguments, spec_of
from .file_editor import FileEditorTool
from .finish import FinishTool
from .task import TaskTool
from .terminal import TerminalTool
from .think import ThinkTool

BUILTIN_TOOLS: dict[str, type[Tool]] = {
    tool.name: tool for tool in (TerminalTool, FileEditorTool, TaskTool, ThinkTool, FinishTool)  # type: ignore[misc]
}
"""Every built-in tool by name, in the order models are told about them."""

__all__ = ["BUILTIN_TOOLS", "Tool", "ToolContext", "ToolResult", "parse_arguments", "spec_of"]
