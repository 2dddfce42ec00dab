"""Everything public is documented: settings, event kinds, hooks."""

from __future__ import annotations

from pathlib import Path

import server.hooks
from server.events import EVENT_KINDS
from server.settings import Settings

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_every_setting_is_in_the_readme_table() -> None:
    missing = [f"OH_{n.upper()}" for n in Settings.model_fields if f"| `OH_{n.upper()}` |" not in README]
    assert not missing, f"document these settings in README.md: {missing}"


def test_every_setting_has_a_docstring() -> None:
    assert all(field.description for field in Settings.model_fields.values())


def test_every_event_kind_is_in_the_readme() -> None:
    missing = [kind for kind in EVENT_KINDS if f"`{kind}`" not in README]
    assert not missing, f"document these event kinds in README.md: {missing}"


def test_every_hook_is_documented() -> None:
    doc = server.hooks.__doc__ or ""
    missing = [hook for hook in server.hooks.HOOKS if f"``{hook}``" not in doc]
    assert not missing, f"document these hooks in server/hooks.py: {missing}"
    assert set(server.hooks.HOOKS) == set(server.hooks.Hooks.__dataclass_fields__)


def test_every_close_code_is_in_the_readme() -> None:
    from server.stream.close_codes import CloseCode

    missing = [code.name for code in CloseCode if str(int(code)) not in README]
    assert not missing, f"document these close codes in README.md: {missing}"
