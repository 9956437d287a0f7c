# The two entry points of a fresh machine; each sets up what it needs first (scripts/setup.sh).
VENV ?= .venv
PROFILE ?= ci
# The gate's time for its checks (`make gate BUDGET=0`: every planned example); empty: the profile's (ci: 165 s).
BUDGET ?=

.PHONY: gate test setup setup-test

gate: setup
	$(VENV)/bin/verify gate --profile $(PROFILE) $(if $(BUDGET),--budget $(BUDGET)) --out reports --junit reports/junit.xml

# The linter and the type checker first (seconds; docs/contributing.md §1), then the tests.
test: setup-test
	$(VENV)/bin/ruff check verify references
	$(VENV)/bin/mypy
	$(VENV)/bin/python -m pytest -n auto

setup:
	scripts/setup.sh

setup-test:
	scripts/setup.sh --test
