# `make run` and `make test` set up everything they need on a fresh clone, and are quick when
# it is already set up.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
VENV_STAMP := $(VENV)/.installed
PEERS_STAMP := peers/node_modules/.installed
PHOENIX_VENV := .venv-phoenix
PHOENIX_STAMP := $(PHOENIX_VENV)/.installed
PHOENIX_LOCK := tests/telemetry/phoenix-requirements.txt
OPENHANDS_VENV := .venv-openhands
OPENHANDS_STAMP := $(OPENHANDS_VENV)/.installed
OPENHANDS_LOCK := plugins/openhands-agent-server/requirements-lock.txt
OPENHANDS_PLUGIN := plugins/openhands-agent-server
OPENHANDS_PREVIOUS_VENV := .venv-openhands-previous
OPENHANDS_PREVIOUS_STAMP := $(OPENHANDS_PREVIOUS_VENV)/.installed
OPENHANDS_PREVIOUS_LOCK := $(OPENHANDS_PLUGIN)/requirements-previous-lock.txt
# Real clients written by others that the tests drive (ACP SDK, AG-UI), each pinned in its own lock file.
CLIENT_STAMPS := clients/acp/node_modules/.installed clients/agui/node_modules/.installed
DEMO_SCRIPT ?= config/demo/two_subagents.yaml
# The other Pythons taskwire supports, and the part of the suite CI runs on each (in .venv-py<v>,
# made by scripts/test-python.sh): the API on the native backend, the ACP and Claude Agent SDK
# backends, the SQLite and PostgreSQL stores, the in-memory and Redis buses. A few minutes each.
# The schemathesis fuzzing of the API (test_openapi.py, the longest) runs on 3.11 only.
COMPAT_PYTHONS := 3.12 3.13
COMPAT_TESTS ?= tests/api --ignore=tests/api/test_openapi.py tests/bus tests/store/test_sqlite_store.py tests/store/test_postgres_store.py \
	tests/store/test_store_append.py tests/acp/test_backend.py tests/claude_sdk/test_recorded_two_subagents.py

DIST ?= dist

.PHONY: $(COMPAT_PYTHONS:%=test-py%) dist run test bench bench-peers setup peers clients acp-client agui-client phoenix openhands openhands-previous services browser clean

setup: $(VENV_STAMP)

# Quiet unless it fails: the installer's output goes to .venv/install.log, shown on failure.
$(VENV_STAMP): pyproject.toml setup.py taskwire-client/pyproject.toml
	@echo "setting up .venv (first run, or pyproject.toml changed; about a minute)…"
	@test -x $(PY) || { $(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' && $(PYTHON) -m venv $(VENV); } \
		|| { echo "cannot create .venv: taskwire needs Python >= 3.11 with venv (this is $$($(PYTHON) --version 2>&1); set PYTHON=...)"; exit 1; }
	@PIP_DISABLE_PIP_VERSION_CHECK=1 $(PY) -m pip install --upgrade pip -e ./taskwire-client -e '.[test]' > $(VENV)/install.log 2>&1 \
		|| { cat $(VENV)/install.log; echo "installing into .venv failed (log above, also in $(VENV)/install.log)"; exit 1; }
	@touch $@

# Claude Code (through claude-agent-acp) for the end-to-end tests, pinned in peers/package-lock.json.
peers: $(PEERS_STAMP)

$(PEERS_STAMP): peers/package.json peers/package-lock.json
	cd peers && npm ci --no-audit --no-fund --loglevel=error
	touch $@

clients: $(CLIENT_STAMPS)
acp-client: clients/acp/node_modules/.installed
agui-client: clients/agui/node_modules/.installed

clients/%/node_modules/.installed: clients/%/package.json clients/%/package-lock.json
	cd clients/$* && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Arize Phoenix, a real trace backend for the tracing tests, in a venv of its own so its many
# dependencies never meet taskwire's pins; every version pinned in $(PHOENIX_LOCK).
phoenix: $(PHOENIX_STAMP)

$(PHOENIX_STAMP): $(PHOENIX_LOCK)
	test -x $(PHOENIX_VENV)/bin/python || $(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install --quiet -r $(PHOENIX_LOCK) && touch $@ \
		|| echo "arize-phoenix not installed: the Phoenix trace tests will skip (and fail in CI)"

# The OpenHands agent-server, sdk and tools 1.58.2 (Python 3.12), every package pinned in one lock,
# and the agent-server plugin (taskwire-openhands, editable): `kind: openhands` agents run on it and
# the plugin's tests start that agent-server. Quiet unless it fails.
openhands: $(OPENHANDS_STAMP)

$(OPENHANDS_STAMP): $(OPENHANDS_LOCK) $(OPENHANDS_PLUGIN)/pyproject.toml
	@scripts/openhands-venv.sh $(OPENHANDS_VENV) $(OPENHANDS_LOCK) $@ -e $(OPENHANDS_PLUGIN)

# The release before (1.57.0) with the plugin, installed without its pins (as when OpenHands is
# upgraded or downgraded under it): the test that the plugin, loaded into a release it was not
# tested with, leaves that agent-server working and says why forwarding is off.
openhands-previous: $(OPENHANDS_PREVIOUS_STAMP)

$(OPENHANDS_PREVIOUS_STAMP): $(OPENHANDS_PREVIOUS_LOCK) $(OPENHANDS_PLUGIN)/pyproject.toml
	@PIP_CHECK=0 scripts/openhands-venv.sh $(OPENHANDS_PREVIOUS_VENV) $(OPENHANDS_PREVIOUS_LOCK) $@ -e $(OPENHANDS_PLUGIN)

services:
	@scripts/ensure-services.sh

# Debian's Chromium for the browser tests (a test tool's own browser download does not work here).
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || echo "chromium not installed: browser tests will skip"

# Every distribution of the repository, wheel and sdist, into $(DIST): taskwire, taskwire-client,
# taskwire-openhands.
dist: setup
	@scripts/dist.sh $(DIST)

run: setup
	@OH_FORWARD_SUBAGENT_EVENTS=$${OH_FORWARD_SUBAGENT_EVENTS:-true} \
	OH_LLM_API=$${OH_LLM_API:-scripted} \
	OH_LLM_SCRIPT=$${OH_LLM_SCRIPT:-$(DEMO_SCRIPT)} \
	$(VENV)/bin/taskwire serve

test: setup peers clients phoenix openhands openhands-previous services browser
	$(PY) -m pytest $(PYTEST_ARGS)
	@$(MAKE) --no-print-directory $(COMPAT_PYTHONS:%=test-py%)

# `make test-py3.12`, `make test-py3.13`: $(COMPAT_TESTS) on that Python (skipped, outside CI,
# when it is not installed).
$(COMPAT_PYTHONS:%=test-py%): test-py%: services
	@scripts/test-python.sh $* $(COMPAT_TESTS) $(PYTEST_ARGS)

bench: setup clients services
	$(PY) bench/run_all.py

# The OpenHands agent-server 1.58.2 beside taskwire on one conversation of 1 M events (long: the
# peer takes minutes to answer at that size). It installs the peer into its own Python 3.12 venv
# (bench/peers/.venv-openhands, pinned by $(OPENHANDS_LOCK)), and skips with
# the reason when no Python 3.12 is found. BENCH_PEERS_ARGS="--events 100000" for a quicker run.
# PEERS picks which peers run; BENCH_PEERS_ARGS go to the OpenHands one, BENCH_LANGGRAPH_ARGS to LangGraph's.
PEERS ?= openhands langgraph
bench-peers: setup
	$(if $(filter openhands,$(PEERS)),$(PY) bench/peers/openhands.py $(BENCH_PEERS_ARGS))
	$(if $(filter langgraph,$(PEERS)),$(PY) bench/peers/langgraph.py $(BENCH_LANGGRAPH_ARGS))

clean:
	rm -rf $(DIST) $(VENV) $(COMPAT_PYTHONS:%=.venv-py%) $(PHOENIX_VENV) $(OPENHANDS_VENV) $(OPENHANDS_PREVIOUS_VENV) bench/peers/.venv-openhands bench/peers/.venv-langgraph peers/node_modules clients/*/node_modules workspace .pytest_cache
