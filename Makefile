# sitelore: the two commands of the README, plus the measuring ones.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint types unit eval bench bench-full clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev,bench]'
	touch $@

## demo: serve the bundled example site on loopback, crawl it, show what was stored, search it
demo: $(VENV)/.installed
	rm -rf .demo && mkdir -p .demo
	$(BIN)/sitelore demo --db .demo/sitelore.db

## test: lint, types, import contracts and the whole suite
test: lint types unit

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts

types: $(VENV)/.installed-dev
	$(BIN)/mypy
	$(BIN)/lint-imports

unit: $(VENV)/.installed-dev
	$(BIN)/pytest -q

## eval: score the converter on the Debian docs set (../shared/eval)
eval: $(VENV)/.installed-dev
	$(BIN)/python scripts/eval_convert.py

## bench: component and crawl figures beside peers (prints numbers, never fails on them)
bench: $(VENV)/.installed-bench
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .demo .mypy_cache .ruff_cache .pytest_cache
