#!/usr/bin/env bash
# Run a part of the suite on another Python: scripts/test-python.sh 3.12 tests/api tests/store ...
# The interpreter is `python<version>` on PATH if it runs (a pyenv shim that is not selected does
# not), else ~/.pyenv/versions/<version>.*/bin/python<version>. It gets a venv of its own,
# .venv-py<version>, set up like .venv (pip install -e ./taskwire-client -e '.[test]', again when pyproject.toml changes).
# Without that Python: skipped with the reason, except in CI (CI=true), where it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$1
shift
venv=".venv-py$version"
python=""
for candidate in "python$version" "$HOME"/.pyenv/versions/"$version".*/bin/python"$version"; do
  if "$candidate" -c 'import sys, venv' >/dev/null 2>&1; then python=$candidate; break; fi
done
if [ -z "$python" ]; then
  reason="no Python $version (python$version on PATH, or ~/.pyenv/versions/$version.*)"
  if [ -n "${CI:-}" ]; then echo "required in CI: $reason"; exit 1; fi
  echo "skipped: $reason"
  exit 0
fi
if [ ! -f "$venv/.installed" ] || [ pyproject.toml -nt "$venv/.installed" ] || [ setup.py -nt "$venv/.installed" ] || [ taskwire-client/pyproject.toml -nt "$venv/.installed" ]; then
  echo "setting up $venv from $python (first run, or pyproject.toml changed; about a minute)…"
  test -x "$venv/bin/python" || "$python" -m venv "$venv"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install --upgrade pip -e ./taskwire-client -e '.[test]' > "$venv/install.log" 2>&1 \
    || { cat "$venv/install.log"; echo "installing into $venv failed (log above, also in $venv/install.log)"; exit 1; }
  touch "$venv/.installed"
fi
"$venv/bin/python" --version
exec "$venv/bin/python" -m pytest "$@"
