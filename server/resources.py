"""The files that ship with taskwire: ``config/`` (default settings, demo scripts, sub-agent
types) and ``plugins/`` (bundled plugin agents).

They live at the top of a checkout (DESIGN.md); an installed package carries them as
``server/bundled/config`` and ``server/bundled/plugins`` (setup.py maps them there), so a server
started in any folder finds them. The installed copy wins when present; otherwise the checkout.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
PROJECT_ROOT = _PACKAGE.parent
"""The checkout's root (where ``peers/`` is installed); in an installed package, site-packages."""
_INSTALLED = _PACKAGE / "bundled"

BUNDLED_ROOT = _INSTALLED if (_INSTALLED / "config").is_dir() else _PACKAGE.parent
"""The folder holding ``config/`` and ``plugins/``: the package's in a wheel, the checkout's otherwise."""
CONFIG_DIR = BUNDLED_ROOT / "config"
"""The bundled ``config/`` folder (``taskwire.toml``, ``demo/``, ``agents/``)."""
PLUGINS_DIR = BUNDLED_ROOT / "plugins"
"""The bundled plugins, one Claude-Code plugin folder each."""
DEFAULT_CONFIG_FILE = CONFIG_DIR / "taskwire.toml"
"""The bundled settings file, read when neither ``OH_CONFIG_FILE`` nor ``./config/taskwire.toml`` names one."""


def bundled_file(value: str) -> str:
    """``value`` made absolute when it is a relative path that names no file from the current
    folder but names a bundled one (``config/demo/hello.yaml`` from any folder); otherwise
    ``value`` unchanged (an absolute path, a file here, inline YAML)."""
    path = Path(value)
    try:
        if path.is_absolute() or path.exists():
            return value
        candidate = BUNDLED_ROOT / path
        return str(candidate) if candidate.is_file() else value
    except (OSError, ValueError):  # inline text too long or odd to be a file name
        return value


def project_path(value: str, cwd: Path) -> str:
    """``value`` made absolute when it is a relative path found under the project root but not
    in ``cwd`` (where a peer agent's command would look for it: ``peers/node_modules/...``)."""
    if "/" not in value or Path(value).is_absolute() or (cwd / value).exists():
        return value
    candidate = PROJECT_ROOT / value
    return str(candidate) if candidate.exists() else value
