# Set-up and checks. Every target installs what it needs into .venv first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

## demo: the main job on the embedded default (a game played by the built-in oracle)
demo: $(STAMP)
	$(BIN)/gem-eval play game:Wordle-v0-easy --policy oracle --seed 0

## test: the whole test suite (pytest's "no tests collected", exit 5, is a failure)
test: $(STAMP)
	@$(BIN)/python -m pytest; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi; exit $$rc

## lint: ruff (lint + format check) and mypy --strict
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

## bench: the benchmarks in bench/ (they print ratios, measured in one run)
bench: $(STAMP)
	$(BIN)/python bench/env_throughput.py
	$(BIN)/python bench/cli_startup.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
