# planner-svc developer commands. Everything runs inside .venv, created on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
DATA ?= data/demo
PORT ?= 50151

.PHONY: setup protos check-protos lint typecheck test test-go test-fast demo fetch-corpus ingest-demo bench clean

$(BIN)/planner-svc: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

setup: $(BIN)/planner-svc

protos: setup
	$(BIN)/python scripts/gen_protos.py

lint: setup
	$(BIN)/ruff check planner_svc tests bench scripts
	$(BIN)/mypy

test: setup test-go
	$(BIN)/python -m pytest -q

# The Go client (clients/go): plan hash vectors and the CLI; modules come from the Go proxy.
test-go:
	cd clients/go && go test ./...

test-fast: setup
	$(BIN)/python -m pytest -q -m 'not integration'

fetch-corpus: setup
	$(BIN)/planner-svc fetch-corpus

demo: setup
	$(BIN)/python scripts/demo.py --data $(DATA) --port $(PORT)

bench: setup
	$(BIN)/python -m bench.run_all

clean:
	rm -rf build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
