# planner-svc developer commands. Everything runs inside .venv, created on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
DATA ?= data/demo
MIXED_DATA ?= data/demo-mixed
PORT ?= 50151

# Fonts the PDF tests write with (Debian packages; installed only when a file is missing).
FONT_PACKAGES := fonts-dejavu-core fonts-noto-cjk fonts-noto-color-emoji
FONT_FILES := /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf \
	/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc \
	/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf

# The one font the demo's mixed corpus writes its PDF with.
DEMO_FONT_FILE := /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf

# Install the Debian packages in $$missing (one apt-get run, through sudo when not root), or
# stop naming them when there is no apt-get.
APT_INSTALL = if [ -n "$$missing" ]; then \
		command -v apt-get >/dev/null || { echo "make: install$$missing (Debian packages)$(1)" >&2; exit 1; }; \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		echo "make: installing$$missing"; \
		$$sudo apt-get update -qq && \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# The PostgreSQL server the shared-store tests start (initdb and pg_ctl in a temporary
# directory; Debian package, installed only when its binaries are missing).
PG_PACKAGE := postgresql

# buf, from the npm package @bufbuild/buf at this version, installed into .cache/npm (never
# globally). It lints and formats the contract and checks it for breaking changes against the
# committed baseline image, which `make buf-baseline` moves (README.md, "The contract").
BUF_VERSION := 1.75.0
NPM_TOOLS := .cache/npm
BUF := $(NPM_TOOLS)/node_modules/.bin/buf
BUF_BASELINE := protos/baseline/planner-v1.binpb

# The TypeScript client: npm packages from its committed package-lock.json (npm ci).
TS := clients/ts
TS_DEPS := $(TS)/node_modules/.package-lock.json

.PHONY: setup system-packages demo-packages demo-port protos lint test test-go test-ts test-fast demo fetch-corpus bench clean \
	buf buf-check buf-baseline check-gen go-tools

# (setuptools announces every editable install with a multi-line notice; it is silenced)
$(BIN)/planner-svc: pyproject.toml
	@echo "installing planner-svc and its Python dependencies into $(VENV) (about a minute)"
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

setup: $(BIN)/planner-svc system-packages

# The Debian packages the tests need (fonts, PostgreSQL), installed in one apt-get run when
# any of their files is missing (through sudo when not root).
system-packages:
	@missing=""; \
	for f in $(FONT_FILES); do [ -f "$$f" ] || missing=" $(FONT_PACKAGES)"; done; \
	if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		missing="$$missing $(PG_PACKAGE)"; \
	fi; \
	$(call APT_INSTALL, for the PDF and shared-store tests)

# The demo needs only the font of its mixed corpus's PDF.
demo-packages:
	@missing=""; [ -f "$(DEMO_FONT_FILE)" ] || missing=" fonts-dejavu-core"; \
	$(call APT_INSTALL, for the demo's PDF)

$(TS_DEPS): $(TS)/package-lock.json
	cd $(TS) && npm ci --no-audit --no-fund
	@touch $@

# Regenerate every language's stubs after editing protos/: Python (planner_svc/api), Go
# (clients/go/gen.sh) and TypeScript (buf generate, buf.gen.yaml).
protos: setup buf $(TS_DEPS)
	$(BIN)/python scripts/gen_protos.py
	clients/go/gen.sh
	$(BUF) generate

# Fail when the committed Go or TypeScript stubs differ from what protos/ generates (the Python
# ones are checked by tests/unit/test_protos_drift.py).
check-gen: setup buf $(TS_DEPS)
	clients/go/gen.sh --check
	rm -rf .cache/ts-gen
	$(BUF) generate -o .cache/ts-gen
	diff -r $(TS)/src/gen .cache/ts-gen/$(TS)/src/gen
	@echo "$(TS)/src/gen is up to date"

buf:
	@[ "$$($(BUF) --version 2>/dev/null)" = "$(BUF_VERSION)" ] || \
		npm install --prefix $(NPM_TOOLS) --no-audit --no-fund --save-exact \
			@bufbuild/buf@$(BUF_VERSION)

# Lint (STANDARD + COMMENTS), formatting, and no breaking change against the baseline.
buf-check: buf
	$(BUF) lint
	$(BUF) format --diff --exit-code
	$(BUF) breaking --against $(BUF_BASELINE)

# Move the baseline to the contract as it is now: only for a deliberate, reviewed break.
buf-baseline: buf
	mkdir -p $(dir $(BUF_BASELINE))
	$(BUF) build --exclude-source-info -o $(BUF_BASELINE)

# grpcurl and ghz at their pinned versions (bench/gotools.py), into .cache/bin.
go-tools: setup
	$(BIN)/python -m bench.gotools

lint: setup
	$(BIN)/ruff check planner_svc tests bench scripts
	$(BIN)/mypy

test: setup test-go test-ts
	$(BIN)/python -m pytest -q

# The Go client (clients/go): plan hash vectors and the CLI; modules come from the Go proxy.
test-go:
	cd clients/go && go test ./...

# The TypeScript client (clients/ts): tsc, then node's test runner over the plan hash vectors and
# a live server (the test ingests the fixture and starts `planner-svc serve` itself).
test-ts: setup $(TS_DEPS)
	cd $(TS) && PLANNER_SVC=$(abspath $(BIN)/planner-svc) npm test

test-fast: setup
	$(BIN)/python -m pytest -q -m 'not integration'

fetch-corpus: setup
	$(BIN)/planner-svc fetch-corpus

# A served port is refused before anything is installed (the demo checks it again as it starts).
demo-port:
	@$(PY) scripts/port_free.py '$(PORT)' 'make demo'

demo: demo-port
	@$(MAKE) --no-print-directory $(BIN)/planner-svc demo-packages
	$(BIN)/python scripts/demo.py --data $(DATA) --mixed-data $(MIXED_DATA) --port $(PORT)

bench: setup
	$(BIN)/python -m bench.run_all

clean:
	rm -rf build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache $(TS)/dist .cache/ts-gen
