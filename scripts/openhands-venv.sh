#!/bin/sh
# The OpenHands venv: Python 3.12 (openhands needs >= 3.12), from its lock file, plus what the rest
# of the arguments name for pip (`-e plugins/openhands-agent-server`: the agent-server plugin).
# Looks for it as bench/peers/peer_setup.py does: $OH_PYTHON312, python3.12 on PATH, pyenv's.
# Quiet unless it fails (the log is kept in the venv). PIP_CHECK=0 skips `pip check` (the venv of the
# previous release holds the plugin beside a release it does not pin, on purpose).
set -u
venv=$1 lock=$2 stamp=$3
shift 3
for candidate in "${OH_PYTHON312:-}" "$(command -v python3.12 2>/dev/null)" $(ls -r "$HOME"/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null); do
    [ -n "$candidate" ] && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null && python=$candidate && break
done
if [ -z "${python:-}" ]; then
    echo "no Python 3.12 found (set OH_PYTHON312=/path/to/python3.12): the OpenHands tests will skip (and fail in CI)"
    exit 0
fi
test -x "$venv/bin/python" || "$python" -m venv "$venv" || exit 1
# --no-deps for the extras: everything they need is in the lock, pinned.
{ PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install -r "$lock" \
    && { [ $# -eq 0 ] || PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install --no-deps "$@"; } \
    && { [ "${PIP_CHECK:-1}" = 0 ] || "$venv/bin/python" -m pip check; }; } > "$venv/install.log" 2>&1 \
    || { cat "$venv/install.log"; echo "installing $lock $* into $venv failed (log above, also in $venv/install.log)"; exit 1; }
touch "$stamp"
