# planner: the two commands a fresh machine needs are `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_WORKERS ?= auto

.PHONY: test demo lint typecheck layers unit e2e conformance docs clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check planner tests bench
	$(BIN)/ruff format --check planner tests bench

typecheck: $(STAMP)
	$(BIN)/mypy --strict planner

layers: $(STAMP)
	$(BIN)/lint-imports

test: lint typecheck layers
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) -q

unit: $(STAMP)
	$(BIN)/python -m pytest -m unit -q

docs: $(STAMP)
	$(BIN)/python -m planner.plan.docs > docs/plan-format.md

demo: $(STAMP)
	$(BIN)/planner validate plans/
	$(BIN)/planner render plans/

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build dist
