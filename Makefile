# Two commands set everything up: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO   ?= demo
export PYTHONHASHSEED := 0

.PHONY: help env demo test test-heavy lint bench explore clean

help:
	@echo "make demo   - create $(VENV), write the demo corpus, build the demo store, print a summary"
	@echo "make test   - run the test suite but the heavy tests (real Ray and Slurm clusters, repeated kills)"
	@echo "make test-heavy - run only the heavy tests (.ci/run runs make test, then this)"
	@echo "make lint   - ruff"
	@echo "make explore - open the explorer on the demo store and plan"
	@echo "make bench  - benchmarks, figures into docs/performance.md"

$(STAMP): pyproject.toml setup.py mixture/text/_signals.c mixture/text/_signals_impl.h \
		mixture/text/_code_tokens.h
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

env: $(STAMP)

demo: $(STAMP)
	$(BIN)/mixture demo $(DEMO)

# one worker per core, each test file on one worker (its module fixtures built once); a single test or file:
# $(BIN)/python -m pytest tests/...
# heavy tests (pyproject markers) take a third of the suite's time on 2 cores: CI runs them after make test
test: $(STAMP)
	$(BIN)/python -m pytest -q -n auto --dist loadfile -m "not heavy"

test-heavy: $(STAMP)
	$(BIN)/python -m pytest -q -n auto --dist loadfile -m heavy

lint: $(STAMP)
	$(BIN)/ruff check mixture pipelines app tests bench

bench: $(STAMP)
	$(BIN)/python -m bench.run

explore: $(STAMP)
	$(BIN)/mixture explore $(DEMO)/store --plan $(DEMO)/plan.json

clean:
	rm -rf $(DEMO) .pytest_cache
