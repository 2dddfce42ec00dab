# `make run` and `make test` set up everything they need on a fresh clone, and are quick when
# it is already set up.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
VENV_STAMP := $(VENV)/.installed
PEERS_STAMP := peers/node_modules/.installed
DEMO_SCRIPT ?= config/demo/two_subagents.yaml

.PHONY: run test bench setup peers services browser clean

setup: $(VENV_STAMP)

$(VENV_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

# Claude Code (through claude-agent-acp) for the end-to-end tests, pinned in peers/package-lock.json.
peers: $(PEERS_STAMP)

$(PEERS_STAMP): peers/package.json peers/package-lock.json
	cd peers && npm ci --no-audit --no-fund --loglevel=error
	touch $@

services:
	@scripts/ensure-services.sh

# Debian's Chromium for the browser tests (a test tool's own browser download does not work here).
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || echo "chromium not installed: browser tests will skip"

run: setup
	OH_FORWARD_SUBAGENT_EVENTS=$${OH_FORWARD_SUBAGENT_EVENTS:-true} \
	OH_LLM_API=$${OH_LLM_API:-scripted} \
	OH_LLM_SCRIPT=$${OH_LLM_SCRIPT:-$(DEMO_SCRIPT)} \
	$(PY) -m server.cli serve

test: setup peers services browser
	$(PY) -m pytest $(PYTEST_ARGS)

bench: setup services
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) peers/node_modules workspace .pytest_cache
