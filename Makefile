# The course's commands. `make lab` and `make test` need only Python 3.11 and make.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
READY  := $(VENV)/.installed
NB     ?=

.PHONY: lab test build grade check bench lint normalize clean help

help:
	@echo "make lab     start JupyterLab on the course (creates .venv when missing)"
	@echo "make test    run the whole test suite (creates .venv when missing)"
	@echo "make build   regenerate release/, notebooks/, submitted/ samples, autograded/, feedback/"
	@echo "make grade   autograde submitted/, write feedback/ and grades.csv, print the scores"
	@echo "make check NB=path/to/notebook.ipynb   run the hidden tests on your own notebook"
	@echo "make bench   measure the numbers the README reports"

# The environment: pinned versions, torch 2.13.0 (CPU build), the course package editable.
$(READY): requirements/constraints.txt requirements/course.txt requirements/dev.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
	    -c requirements/constraints.txt -r requirements/dev.txt -e .
	@touch $@

lab: $(READY)
	$(BIN)/python -m mlmcourse lab

test: $(READY)
	$(BIN)/python -m ruff check mlmcourse tests samples
	$(BIN)/python -m pytest

build: $(READY)
	$(BIN)/python -m mlmcourse build

grade: $(READY)
	$(BIN)/python -m mlmcourse grade

check: $(READY)
	@test -n "$(NB)" || { echo "usage: make check NB=path/to/notebook.ipynb"; exit 2; }
	$(BIN)/python -m mlmcourse check "$(NB)"

bench: $(READY)
	$(BIN)/python -m mlmcourse bench

lint: $(READY)
	$(BIN)/python -m ruff check mlmcourse tests samples

normalize: $(READY)
	$(BIN)/python -m mlmcourse normalize

clean:
	rm -rf $(VENV) build gradebook.db grades.csv .pytest_cache .ruff_cache
