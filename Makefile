# The course's commands. `make lab` and `make test` need only Python 3.11 (3.11.5 or later) and make.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
READY  := $(VENV)/.installed-course
READY_DEV := $(VENV)/.installed-dev
READY_HUB := $(VENV)/.installed-hub
NB     ?=
# The hub's proxy (configurable-http-proxy), pinned by deploy/hub/package-lock.json, from npm.
PROXY  := build/node/node_modules/.bin/configurable-http-proxy
# The browser tests' accessibility checker (axe-core), pinned by tests/browser/package-lock.json.
AXE    := build/axe/node_modules/axe-core/axe.min.js
# Two pytest processes (pytest-xdist): most tests wait on a browser, a hub or a kernel, and
# leave a core idle; tests/conftest.py sends each module whole to one of them.
PYTEST := $(BIN)/python -m pytest -n 2
HUB_ARGS ?=
ROSTER ?=
# A class of your own (make new-class): grade, export, report and lab-ta work on it; without
# CLASS they work on the repository itself, whose submitted/ holds the sample students.
CLASS  ?=
IN_CLASS = $(if $(CLASS),MLMCOURSE_ROOT="$(abspath $(CLASS))")

.PHONY: passback new-class report lab lab-ta test test-quick build grade export check site bench bench-class lint normalize hub hub-roster hub-stop image clean help

help:
	@echo "make lab     a student's JupyterLab: your copies of the released notebooks in work/"
	@echo "make lab-ta  a TA's JupyterLab: the whole course, with nbgrader's formgrader"
	@echo "make test    run the whole test suite (creates .venv when missing)"
	@echo "make test-quick  the edit loop's tier: no build, no grading of the sample class, no browser or hub"
	@echo "make build   regenerate what changed: release/, notebooks/, submitted/ samples, autograded/, feedback/"
	@echo "make new-class CLASS=~/bert_mlm_class ROSTER=roster.csv   a class of your own, apart from the samples"
	@echo "make grade   autograde submitted/, write feedback/, grades.csv, grades-lms.csv and reports/ (the class report), print the scores (ARGS=\"--workers 4\")"
	@echo "             (CLASS=folder: grade, export, report and lab-ta work on that class)"
	@echo "make report  the class report again, from the gradebook and autograded/"
	@echo "make passback  each student's score to the LMS's line item (LTI 1.3 AGS; lti.json; ARGS=\"--dry-run\")"
	@echo "make export  the gradebook as grades-lms.csv for the school's system (nbgrader export)"
	@echo "make check NB=path/to/notebook.ipynb   run the hidden tests on your own notebook"
	@echo "make site    the reading edition as HTML pages in build/site/ (open index.html)"
	@echo "make bench   measure the figures of docs/numbers.md and write it again"
	@echo "make hub     (root) JupyterHub for a class on 127.0.0.1:8000 (MLMCOURSE_HUB_PORT); first time:"
	@echo "             make hub HUB_ARGS=\"--instructor NAME --roster roster.csv [--create-users]\""
	@echo "make hub-roster ROSTER=roster.csv   (root) the class as the roster says, while the hub runs"
	@echo "make hub-stop  (root) every user's server, the hub, every process it started, any container left"
	@echo "make image   (root) the course image (podman, mmdebstrap): build/image/mlmcourse-<key>.oci.tar"
	@echo "make bench-class  (root) ten students on the container hub: Validate times, memory"

# The environment: pinned versions, torch 2.13.0 (CPU build), the course package editable.
# `make lab` needs the course; `make test` adds the test tools and the optional extras.
$(READY): requirements/constraints.txt requirements/course.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
	    -c requirements/constraints.txt -r requirements/course.txt -e .
	$(BIN)/python -m mlmcourse install-config
	@touch $@

$(READY_DEV): $(READY) $(wildcard requirements/*.txt)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
	    -c requirements/constraints.txt -r requirements/dev.txt -e .
	@touch $@

# The hub's side (dockerspawner, ngshare): `make hub` needs it; dev.txt includes it for tests.
$(READY_HUB): $(READY) requirements/hub.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
	    -c requirements/constraints.txt -r requirements/hub.txt
	@touch $@

lab: $(READY)
	$(BIN)/python -m mlmcourse lab

lab-ta: $(READY)
	$(IN_CLASS) $(BIN)/python -m mlmcourse lab --ta

# npm is optional for `make test`: without it the hub test says why it skips.
$(PROXY): deploy/hub/package.json deploy/hub/package-lock.json
	mkdir -p build/node
	cp deploy/hub/package.json deploy/hub/package-lock.json build/node/
	npm ci --prefix build/node --no-audit --no-fund --loglevel=error
	@touch $@

# A test tool apart from the hub's proxy: the hub never installs it.
$(AXE): tests/browser/package.json tests/browser/package-lock.json
	mkdir -p build/axe
	cp tests/browser/package.json tests/browser/package-lock.json build/axe/
	npm ci --prefix build/axe --no-audit --no-fund --loglevel=error
	@touch $@

# The course image builds in the background while the other tests run (mostly downloads and
# unpacking), first of all: image.py needs only the standard library, so it starts before the
# environment is made (pip's install leaves a core idle), and into podman's storage only (the
# tests need no OCI archive: its save compresses 1.8 GB). A container test that needs it waits
# for that build (image.py takes a lock) and lends it its own CPU priority. It stays in the
# tests' session: the kernel's autogroups share the CPU between sessions first, so a build in a
# session of its own would take as much as the whole suite, whatever its nice value.
test:
	@mkdir -p build
	@if command -v podman >/dev/null && [ "$$(id -u)" = 0 ]; then \
	    echo "building the course image in the background (build/image.log)"; \
	    ( nice -n 19 $(PYTHON) deploy/container/image.py --no-archive \
	        > build/image.log 2>&1 & ); fi
	@$(MAKE) --no-print-directory $(READY_DEV)
	@command -v npm >/dev/null && $(MAKE) --no-print-directory $(PROXY) $(AXE) || true
	$(BIN)/python -m ruff check mlmcourse tests samples deploy
	$(PYTEST)

# The edit loop: everything that needs neither the fresh build (the sample class graded once),
# nor a browser, nor a hub. `make test` runs these too.
test-quick: $(READY_DEV)
	$(BIN)/python -m ruff check mlmcourse tests samples deploy
	$(PYTEST) -m "not slow and not browser and not hub and not bench"

build: $(READY_DEV)
	$(BIN)/python -m mlmcourse build --if-stale

new-class: $(READY_DEV)
	@test -n "$(CLASS)" || { echo "usage: make new-class CLASS=~/bert_mlm_class [ROSTER=roster.csv]"; exit 2; }
	$(BIN)/python -m mlmcourse new-class "$(CLASS)" $(if $(ROSTER),--roster "$(ROSTER)")

grade: $(READY_DEV)
	$(IN_CLASS) $(BIN)/python -m mlmcourse grade $(ARGS)

report: $(READY_DEV)
	$(IN_CLASS) $(BIN)/python -m mlmcourse report

# Grades back to the LMS (LTI AGS), from lti.json in the course root; ARGS="--dry-run" first.
passback: $(READY)
	$(IN_CLASS) $(BIN)/python -m mlmcourse passback $(ARGS)

export: $(READY_DEV)
	cd "$(if $(CLASS),$(abspath $(CLASS)),$(CURDIR))" && PATH="$(CURDIR)/$(BIN):$$PATH" "$(CURDIR)/$(BIN)/python" -m nbgrader export

check: $(READY)
	@test -n "$(NB)" || { echo "usage: make check NB=path/to/notebook.ipynb"; exit 2; }
	$(BIN)/python -m mlmcourse check "$(NB)"

site: $(READY_DEV)
	$(BIN)/python -m mlmcourse site

bench: $(READY_DEV)
	$(BIN)/python -m mlmcourse bench

lint: $(READY_DEV)
	$(BIN)/python -m ruff check mlmcourse tests samples deploy

# The course on a JupyterHub (deploy/hub/, docs/hub-admin.md): with HUB_ARGS it prepares the
# hub's folder (/srv/mlmcourse-hub by default) first; then it starts the hub set up last (as root).
hub: $(READY_HUB) $(PROXY)
	@test -z "$(HUB_ARGS)" || $(BIN)/python deploy/hub/hubctl.py setup $(HUB_ARGS)
	$(BIN)/python deploy/hub/hubctl.py start

# The end of a term (or of the machine's day): every user's server, the hub and its proxy. A
# plain Ctrl-C of the hub leaves servers and proxy running, so that a restart keeps every kernel.
hub-stop: $(READY_HUB)
	$(BIN)/python deploy/hub/hubctl.py stop $(HUB_ARGS)

# Students and TAs join or leave while the hub runs (accounts, groups, gradebook; no restart).
hub-roster: $(READY_HUB)
	@test -n "$(ROSTER)" || { echo "usage: make hub-roster ROSTER=roster.csv [HUB_ARGS=--create-users]"; exit 2; }
	$(BIN)/python deploy/hub/hubctl.py roster "$(ROSTER)" $(HUB_ARGS)

# The course image (deploy/container/image.py): Debian packages and the pinned environment, no
# base image pulled; cached by a hash of its inputs, so a second run only loads it.
image: $(READY)
	$(BIN)/python deploy/container/image.py

bench-class: $(READY_DEV) $(PROXY)
	$(BIN)/python deploy/container/bench_class.py

normalize: $(READY)
	$(BIN)/python -m mlmcourse normalize

clean:
	rm -rf $(VENV) build gradebook.db grades.csv grades-lms.csv .pytest_cache .ruff_cache
