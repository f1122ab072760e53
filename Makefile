# Quick start:  make run   (design the data pipeline with the embedded model)
#               make test  (lint, format check and the whole test suite)
# Both create .venv and install what they need on first use.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The library alone, as its users install it (CI proves it needs none of the app).
LIB_VENV ?= .venv-library

.PHONY: run test test-library lint bench clean system-packages

# uv installs from the lock; pip brings uv itself, at this version.
UV_VERSION = 0.13.8

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(BIN)/uv: | $(BIN)/python
	$(BIN)/pip install -q uv==$(UV_VERSION)

# The app and the library it stands on (library/: its own installable unit), both editable,
# everything else at the versions uv.lock pins; --locked refuses a lock that pyproject.toml
# or setup.py has outgrown (then run .venv/bin/uv lock).
$(VENV)/.installed: pyproject.toml setup.py library/pyproject.toml uv.lock | $(BIN)/uv
	UV_PROJECT_ENVIRONMENT=$(VENV) $(BIN)/uv sync -q --locked --inexact --all-extras
	touch $@

run: $(VENV)/.installed
	$(BIN)/ima run $(ARGS)

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

# The tests start their own private PostgreSQL server (initdb in a temporary directory, a
# free loopback port), open the run view in headless Chromium and play TextWorld Commonsense
# on a Java runtime: install what is missing (Debian/Ubuntu packages; never a browser download).
NEEDED = $(shell command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb \
	>/dev/null 2>&1 || echo postgresql) $(shell command -v chromium >/dev/null 2>&1 || echo chromium) \
	$(shell command -v java >/dev/null 2>&1 || echo openjdk-17-jre-headless)

system-packages:
	@if [ -n "$(strip $(NEEDED))" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(NEEDED) || \
			{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(NEEDED); }; \
		else \
			echo "the tests need: sudo apt-get install $(NEEDED)"; exit 1; \
		fi; \
	fi

$(LIB_VENV)/.installed: library/pyproject.toml
	$(PYTHON) -m venv $(LIB_VENV)
	$(LIB_VENV)/bin/pip install -q --upgrade pip
	$(LIB_VENV)/bin/pip install -q -e "./library[test]"
	touch $@

# The library's tests in a venv that holds the library and nothing of the app.
test-library: $(LIB_VENV)/.installed
	cd library && ../$(LIB_VENV)/bin/pytest -q -p no:cacheprovider

test: lint system-packages test-library
	$(BIN)/pytest --durations=25

clean:
	rm -rf $(VENV) $(LIB_VENV) .pytest_cache .ruff_cache

bench: $(VENV)/.installed
	$(BIN)/python -m benchmarks.run $(ARGS)
