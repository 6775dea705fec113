# mailagent: `make run` serves the app with demo data, `make test` runs the whole suite.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: help install install-test run test lint typecheck pytest pytest-postgres bench clean

help:
	@echo "make run    - set up everything and serve http://$(HOST):$(PORT) (uvicorn + background jobs)"
	@echo "make test   - ruff, mypy, pytest on SQLite and on PostgreSQL+pgvector"
	@echo "make install / make install-test / make bench / make clean"

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
	@touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test
	@./scripts/install-system-deps

run: install
	DEBUG=$${DEBUG:-1} $(PY) manage.py migrate --noinput
	DEBUG=$${DEBUG:-1} $(PY) manage.py bootstrap
	DEBUG=$${DEBUG:-1} $(PY) manage.py serve --host $(HOST) --port $(PORT)

lint: install-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install-test
	$(VENV)/bin/mypy

# The suite runs as four pytest processes, each on a fresh test database: in one process, after ~520 tests, every
# new SQLite connection failed with "disk I/O error" (twice on fresh clones, first after a test that ends a
# manage.py subprocess; each part alone passes). Root cause not found yet: see the session's closing note.
PYTEST_PARTS := "tests/mailagent -m 'not faults'" \
	"tests/accounts tests/ask tests/dashboard tests/orchestration -m 'not faults'" \
	"tests/organization tests/replies tests/results tests/routing tests/search tests/setup tests/workspaces -m 'not faults'" \
	"tests -m faults"

pytest: install-test
	@for part in $(PYTEST_PARTS); do echo "pytest $$part"; eval $(VENV)/bin/pytest $$part || exit 1; done

pytest-postgres: install-test
	@for part in $(PYTEST_PARTS); do echo "MAILAGENT_TEST_POSTGRES=1 pytest $$part"; \
		eval MAILAGENT_TEST_POSTGRES=1 $(VENV)/bin/pytest $$part || exit 1; done

test: lint typecheck pytest pytest-postgres

bench: install-test
	$(PY) bench/ingest.py
	$(PY) bench/search.py
	$(PY) bench/routing.py
	$(PY) bench/orchestration.py

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
