#!/bin/sh
# `make dist`: the wheel and sdist of each distribution this repository builds (taskwire,
# taskwire-client, taskwire-openhands), into $1 (dist/).
# Built from a copy of the tracked (and new, not ignored) files, so the checkout stays clean.
set -eu
out=$(realpath -m "${1:-dist}")
python=${PYTHON:-.venv/bin/python}
cd "$(dirname "$0")/.."
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
git ls-files --cached --others --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$src"
mkdir -p "$out"
for folder in taskwire-client plugins/openhands-agent-server .; do
    "$python" -m build --sdist --wheel --outdir "$out" "$src/$folder" > "$src/build.log" 2>&1 \
        || { cat "$src/build.log"; echo "building $folder failed (log above)"; exit 1; }
done
ls -1 "$out"
