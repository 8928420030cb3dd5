# sitelore: the two commands of the README, plus the measuring ones.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test quick lint types unit eval eval-search bench bench-full bench-scale schema serve clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

$(VENV)/.installed-bench: $(VENV)/.installed-dev
	touch $@

## demo: serve the bundled example site on loopback, crawl it, show what was stored, search it
demo: $(VENV)/.installed
	rm -rf .demo && mkdir -p .demo
	$(BIN)/sitelore demo --db .demo/sitelore.db
	@echo
	@echo "Browse the demo store in the web UI: make serve   (or: sitelore serve --db .demo/sitelore.db"
	@echo "with the api extra), then open http://127.0.0.1:8000/"

## test: lint, types, import contracts and the whole suite
test: lint types unit

## quick: the unit and conformance tests only (no services, no network servers; seconds)
quick: $(VENV)/.installed-dev
	$(BIN)/pytest -q tests/unit tests/conformance

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts
	$(BIN)/python scripts/gen_config_schema.py --check

types: $(VENV)/.installed-dev
	$(BIN)/mypy
	$(BIN)/lint-imports

unit: $(VENV)/.installed-dev
	$(BIN)/pytest -q

## eval: score the converter on the Debian docs set (../shared/eval)
eval: $(VENV)/.installed-dev
	$(BIN)/python scripts/eval_convert.py

## eval-search: question answering over real docs (Python, PostgreSQL, Rust) and search latency
eval-search: $(VENV)/.installed-dev
	$(BIN)/python scripts/eval_search.py

## bench: component and crawl figures beside peers (prints numbers, never fails on them)
bench: $(VENV)/.installed-bench
	$(BIN)/python bench/run.py

## bench-full: bench plus 10k-page runs (Scrapy included) and a 100k-page sitelore run (~25 min)
bench-full: $(VENV)/.installed-bench
	$(BIN)/python bench/run.py --full

## bench-scale: scale-out figures (1/2/4 workers on Redis + PostgreSQL; Redis bytes per URL)
bench-scale: $(VENV)/.installed-bench
	$(BIN)/python bench/scale_bench.py

## schema: regenerate schemas/sitelore.schema.json from the settings model
schema: $(VENV)/.installed-dev
	$(BIN)/python scripts/gen_config_schema.py

## serve: the web UI (http://127.0.0.1:8000/) and REST API (/api/v1) over the demo store
serve: $(VENV)/.installed-dev
	$(BIN)/sitelore serve --db .demo/sitelore.db

clean:
	rm -rf $(VENV) .demo .mypy_cache .ruff_cache .pytest_cache
