# Two commands set everything up: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO   ?= demo
export PYTHONHASHSEED := 0

.PHONY: help env demo test lint bench explore clean

help:
	@echo "make demo   - create $(VENV), write the demo corpus, build the demo store, print a summary"
	@echo "make test   - run the whole test suite"
	@echo "make lint   - ruff"
	@echo "make bench  - benchmarks, figures into docs/performance.md"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

env: $(STAMP)

demo: $(STAMP)
	$(BIN)/mixture demo-corpus $(DEMO)/corpus
	$(BIN)/mixture build specs/demo.yaml
	$(BIN)/mixture summary $(DEMO)/store

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check mixture pipelines app tests bench

bench: $(STAMP)
	$(BIN)/python -m bench.run

clean:
	rm -rf $(DEMO) .pytest_cache
