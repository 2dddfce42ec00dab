"""The real Claude Code, offline: the environment that points it at ``taskwire mock-llm``."""

from __future__ import annotations

from pathlib import Path


def offline_claude_env(base_url: str, home: Path) -> dict[str, str]:
    """What Claude Code needs to talk only to the scripted model at ``base_url``, with its own
    ``HOME`` (its settings and transcripts stay out of the user's)."""
    home.mkdir(parents=True, exist_ok=True)
    return {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "HOME": str(home),
        # Claude Code refuses to bypass permissions as root outside a sandbox it knows of.
        "IS_SANDBOX": "1",
    }
