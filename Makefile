# Quick start:  make run   (design the data pipeline with the embedded model)
#               make test  (lint, format check and the whole test suite)
# Both create .venv and install what they need on first use.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: run test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e ".[dev,embedded]"
	touch $@

run: $(VENV)/.installed
	$(BIN)/ima run $(ARGS)

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: lint
	$(BIN)/pytest

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

bench: $(VENV)/.installed
	$(BIN)/python -m benchmarks.run $(ARGS)
