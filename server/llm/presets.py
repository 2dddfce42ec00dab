"""Ready-made lanes for the side requests real clients make, named in a script's ``presets``.

``claude_code``: Claude Code asks, besides its agents' turns, for
- a session title (under ACP and interactive use; ``claude -p`` and the SDK skip it): system
  prompt "You are naming a coding session...", one user message ``<session>...</session>``,
  ``output_config.format`` a JSON schema with a ``title`` string; answered ``{"title": ...}``;
- a prompt suggestion after a turn ends (under ACP): the main history plus a last user message
  starting ``[SUGGESTION MODE: ...``; answered with empty text (the model stays silent).

Both lanes are ``optional`` (never reported unused) and ``repeat`` (answer every time).
"""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, list[dict[str, Any]]] = {
    "claude_code": [
        {
            "name": "claude-code-title",
            "optional": True,
            "repeat": True,
            "match": {"system_contains": "You are naming a coding session"},
            "turns": [{"text": '{"title": "Scripted session"}'}],
        },
        {
            "name": "claude-code-suggestion",
            "optional": True,
            "repeat": True,
            "match": {"last_user_contains": "[SUGGESTION MODE:"},
            "turns": [{"text": ""}],
        },
    ],
}
