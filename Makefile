# Two commands do everything from a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export DAGSTER_HOME := $(CURDIR)/.dagster_home
# pytest workers: both cores by default
TEST_WORKERS ?= 2

.PHONY: install demo test test-slow lint docs screenshots ui bench clean lock

# Python writes bytecode caches as it imports (the default): an environment that sets
# PYTHONDONTWRITEBYTECODE would make every process of the demo and the tests compile
# dagster, polars, sklearn... again (~7 CPU-s each); uv, unlike pip, leaves compiling to
# that first import
unexport PYTHONDONTWRITEBYTECODE

# the locked set is installed by uv (a PyPI package, put into the venv by pip; ~10x faster
# than pip on the same lock), plain pip when uv cannot be installed or fails
UV_VERSION := 0.13.9
# uv reads no pip configuration: a mirror given to pip by environment reaches uv too (one
# set in pip.conf does not: there uv goes to PyPI, and falls back to pip if it cannot)
ifneq ($(PIP_INDEX_URL),)
export UV_INDEX_URL ?= $(PIP_INDEX_URL)
endif
ifneq ($(PIP_EXTRA_INDEX_URL),)
export UV_EXTRA_INDEX_URL ?= $(PIP_EXTRA_INDEX_URL)
endif
ifneq ($(PIP_FIND_LINKS),)
export UV_FIND_LINKS ?= $(PIP_FIND_LINKS)
endif
$(BIN)/arena-assets: pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	{ $(BIN)/python -m pip install -q 'uv==$(UV_VERSION)' && \
	  $(BIN)/python -m uv pip install -q --python $(BIN)/python -c requirements.lock -e '.[dev]'; } || \
	{ echo "uv failed: installing with pip"; \
	  $(BIN)/python -m pip install -q --upgrade pip && \
	  $(BIN)/python -m pip install -q -c requirements.lock -e '.[dev]'; }
	touch $@

install: $(BIN)/arena-assets .env $(DAGSTER_HOME)/dagster.yaml

# .env is yours: created from .env.example, then only variables it lacks are appended
# when .env.example gains some (an older checkout's .env keeps working after an update).
# Values are written NAME=${NAME:-value} so a variable exported in the shell wins for the
# Dagster CLI as for arena-assets (one rule: arena_assets/envfile.py)
.env: .env.example $(BIN)/arena-assets
	@$(BIN)/python -m arena_assets.envfile .env.example $@
	@touch $@

# pool limits dagster.yaml cannot hold (one site build at a time): instance state, set here
$(DAGSTER_HOME)/dagster.yaml: dagster.yaml $(BIN)/arena-assets
	mkdir -p $(DAGSTER_HOME)
	cp dagster.yaml $@
	$(BIN)/python -m arena_assets.defs.site.pools

## simulate 3 months, materialize every asset for them through Dagster, print a summary
demo: install
	$(BIN)/arena-assets demo

## the whole fast suite (slow-marked tests excluded; `make test-slow` runs them)
test: install
	$(BIN)/pytest -n $(TEST_WORKERS) -m "not slow"

test-slow: install
	$(BIN)/pytest -n $(TEST_WORKERS) -m slow

## ruff (lint and format) and the architecture contracts (import-linter, pyproject.toml)
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

## the documentation site, built strictly (a broken link or a stale reference fails it)
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -d site

## the documentation's pictures of the UI and the site, taken in headless Chromium from the
## demo's data (run `make demo` first; Debian's chromium at /usr/bin/chromium)
screenshots: install
	$(BIN)/python docs/screenshots.py

## the Dagster UI on http://127.0.0.1:3000 over the demo's instance and data (`dg dev`
## run from a folder holding the merged .env: see arena_assets/cli/ui.py)
ui: install
	$(BIN)/arena-assets ui --host 127.0.0.1 --port 3000

## throughput and memory figures (see README, "Figures")
bench: install
	$(BIN)/python benchmarks/bench_ingest.py --conversations 200000
	$(BIN)/python benchmarks/bench_ranking.py

## re-pin requirements.lock from the current environment
lock:
	$(BIN)/python -m pip freeze --exclude-editable | grep -v -e '^arena-assets' -e '^uv==' > requirements.lock

clean:
	rm -rf data .dagster_home .tmp_dagster_home_*
