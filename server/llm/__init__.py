"""LLM clients: OpenAI-compatible, Anthropic Messages, and the scripted model.

``make_llm`` picks one from an agent's ``llm`` config, falling back to the server's
``OH_LLM_*`` settings for every field the config leaves out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import LLMError
from .anthropic import AnthropicLLM
from .base import LLM, CallAbandoned, CallObserver, ChatMessage, LLMRequest, LLMResponse, RetryNotice, ToolCall, ToolSpec
from .gates import ProviderGates
from .openai import OpenAILLM
from .retry import RetryPolicy
from .scripted import ScriptedLLM
from .transport import ModelHTTP
from ..resources import CONFIG_DIR
from ..settings import Settings

__all__ = [
    "LLM",
    "AnthropicLLM",
    "CallAbandoned",
    "CallObserver",
    "ChatMessage",
    "LLMRequest",
    "LLMResponse",
    "ModelHTTP",
    "OpenAILLM",
    "ProviderGates",
    "RetryNotice",
    "RetryPolicy",
    "ScriptedLLM",
    "ToolCall",
    "ToolSpec",
    "make_llm",
]


def make_llm(
    config: dict[str, Any] | None, settings: Settings, http: ModelHTTP | None = None,
    gates: ProviderGates | None = None,
) -> LLM:
    """The LLM for ``config`` (an ``llm`` spec: ``{"api", "model", "base_url", "api_key",
    "script", "pace", "max_retries", "retry_max_seconds", "stall_timeout", "max_concurrency"}``,
    any of them omitted). Raises ``LLMError`` for an unknown ``api`` or a scripted model without a
    usable script. ``http``: the server's client for model calls (``ModelHTTP``), which the
    model leaves open; without it an HTTP model makes its own. ``gates``: the server's shared
    rate limits and caps per provider."""
    merged = settings.llm_defaults()
    merged.update({k: v for k, v in (config or {}).items() if v is not None})
    api = merged.get("api")
    if api == "scripted":
        if not merged.get("script"):
            raise LLMError("the scripted LLM needs a script (llm.script or OH_LLM_SCRIPT)")
        # A file the request names lies under the config folder or a workspace root; the
        # operator's own OH_LLM_SCRIPT may lie anywhere.
        requested = (config or {}).get("script") is not None
        # Resolved only if a file is read: every sub-agent of a scripted tree loads an inline script.
        roots = (lambda: script_roots(settings)) if requested else None
        return ScriptedLLM(merged["script"], pace=float(merged.get("pace") or 0), roots=roots)
    if api in ("openai", "anthropic"):
        client = OpenAILLM if api == "openai" else AnthropicLLM
        return client(
            model=str(merged.get("model") or settings.llm_model),
            base_url=merged.get("base_url"),
            api_key=merged.get("api_key"),
            timeout=float(merged.get("timeout") or settings.llm_timeout),
            http=http,
            retry=RetryPolicy(max_retries=int(merged["max_retries"]), max_seconds=float(merged["retry_max_seconds"])),
            stall_timeout=float(merged["stall_timeout"]),
            gates=gates,
            max_concurrency=merged.get("max_concurrency"),
        )
    raise LLMError(f"unknown LLM api {api!r}; expected openai, anthropic or scripted")


def script_roots(settings: Settings) -> list[Path]:
    """Where a file named in a request (a script, a ``claude_sdk`` transcript to replay) may
    lie: the config folder (the demo scripts) and the workspace roots (``OH_WORKSPACE_PATH``
    and ``OH_WORKSPACE_ROOTS``), and the bundled config folder (the demo scripts of an installed
    package, wherever it was started)."""
    return [settings.config_dir, CONFIG_DIR, *settings.workspace_roots_resolved()]
