# planner-svc developer commands. Everything runs inside .venv, created on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
DATA ?= data/demo
PORT ?= 50151

# Fonts the PDF tests write with (Debian packages; installed only when a file is missing).
FONT_PACKAGES := fonts-dejavu-core fonts-noto-cjk fonts-noto-color-emoji
FONT_FILES := /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf \
	/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc \
	/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf

.PHONY: setup fonts protos check-protos lint typecheck test test-go test-fast demo fetch-corpus ingest-demo bench clean

$(BIN)/planner-svc: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

setup: $(BIN)/planner-svc fonts

fonts:
	@missing=""; for f in $(FONT_FILES); do [ -f "$$f" ] || missing=1; done; \
	if [ -n "$$missing" ]; then \
		command -v apt-get >/dev/null || { echo "make: install $(FONT_PACKAGES) (Debian packages) for the PDF tests" >&2; exit 1; }; \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		echo "make: installing $(FONT_PACKAGES)"; \
		$$sudo apt-get update -qq && \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(FONT_PACKAGES) >/dev/null; \
	fi

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
