"""The package's own metadata builds without warnings of ours."""

from __future__ import annotations

import tomllib

from tests.conftest import REPO


def test_the_license_is_an_spdx_expression_not_a_deprecated_table() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    assert not [c for c in project.get("classifiers", []) if c.startswith("License ::")]
