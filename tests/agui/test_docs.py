"""docs/agui.md maps every event kind and names every error code the AG-UI routes answer."""

from __future__ import annotations

import re
from pathlib import Path

from taskwire.events import EVENT_KINDS

DOC = (Path(__file__).resolve().parents[2] / "docs" / "agui.md").read_text()
SOURCES = Path(__file__).resolve().parents[2] / "server"


def test_every_event_kind_has_a_row_in_the_mapping_table() -> None:
    rows = [line for line in DOC.splitlines() if line.startswith("| `")]
    missing = [kind for kind in EVENT_KINDS if not any(row.startswith(f"| `{kind}`") for row in rows)]
    assert not missing, f"map these kinds in docs/agui.md: {missing}"


def test_every_error_code_of_the_routes_is_documented() -> None:
    code = re.compile(r'code="([a-z_]+)"')
    files = [*(SOURCES / "agui").glob("*.py"), SOURCES / "api" / "agui.py", SOURCES / "api" / "sse.py"]
    codes = {c for f in files for c in code.findall(f.read_text())}
    missing = sorted(c for c in codes if f"`{c}`" not in DOC)
    assert codes and not missing, f"document these error codes in docs/agui.md: {missing}"
