"""Everything public is documented, where a reader looks for it, and every link leads somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import taskwire.hooks
from taskwire.events import EVENT_KINDS
from taskwire.settings import Settings
from taskwire_client.close_codes import CloseCode

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
README = REPO / "README.md"

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def text(page: str) -> str:
    return (DOCS / page).read_text()


def test_every_setting_is_in_the_configuration_table() -> None:
    table = text("configuration.md")
    missing = [f"OH_{n.upper()}" for n in Settings.model_fields if f"| `OH_{n.upper()}` |" not in table]
    assert not missing, f"document these settings in docs/configuration.md: {missing}"


def test_every_setting_has_a_docstring() -> None:
    assert all(field.description for field in Settings.model_fields.values())


def test_every_event_kind_is_in_the_api_page() -> None:
    api = text("api.md")
    missing = [kind for kind in EVENT_KINDS if f"| `{kind}` |" not in api]
    assert not missing, f"document these event kinds in docs/api.md: {missing}"


def test_every_close_code_is_in_the_api_page() -> None:
    api = text("api.md")
    missing = [code.name for code in CloseCode if not re.search(rf"\b{int(code)}\b", api)]
    assert not missing, f"document these close codes in docs/api.md: {missing}"


def test_every_hook_is_documented() -> None:
    doc = taskwire.hooks.__doc__ or ""
    missing = [hook for hook in taskwire.hooks.HOOKS if f"``{hook}``" not in doc]
    assert not missing, f"document these hooks in server/hooks.py: {missing}"
    assert set(taskwire.hooks.HOOKS) == set(taskwire.hooks.Hooks.__dataclass_fields__)


def test_the_readme_fits_the_first_ten_minutes() -> None:
    assert len(README.read_bytes()) < 8 * 1024, "README.md is for the first ten minutes: move detail to docs/"


def test_every_docs_page_is_one_click_from_the_readme() -> None:
    linked = {Path(target.split("#")[0]).name for target in LINK.findall(README.read_text()) if target.startswith("docs/")}
    pages = {page.name for page in DOCS.glob("*.md")}
    assert not pages - linked, f"link these pages from README.md: {sorted(pages - linked)}"


def test_every_link_in_the_readme_and_the_docs_leads_somewhere() -> None:
    broken = []
    for source in [README, *sorted(DOCS.glob("*.md"))]:
        for target in LINK.findall(source.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: not ours to check
            path, _, anchor = target.partition("#")
            resolved = (source.parent / path).resolve() if path else source
            if not resolved.exists():
                broken.append(f"{source.relative_to(REPO)}: {target}")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{source.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, broken


def anchors(page: Path) -> set[str]:
    """The ids GitHub gives a page's headings: lower case, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", page.read_text(), flags=re.S), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}
