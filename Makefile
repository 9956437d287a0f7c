# The two entry points of a fresh machine; each sets up what it needs first (scripts/setup.sh).
VENV ?= .venv
PROFILE ?= ci

.PHONY: gate test setup setup-test

gate: setup
	$(VENV)/bin/verify gate --profile $(PROFILE) --out reports --junit reports/junit.xml

test: setup-test
	$(VENV)/bin/python -m pytest -n auto

setup:
	scripts/setup.sh

setup-test:
	scripts/setup.sh --test
