# The two commands of the README: `make book` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NBDIR := .nbtest
SHELL := /bin/bash

.PHONY: book test lab bench clean

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "Python 3.10+ is needed; set PYTHON=python3.x")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -e .
	touch $@

## Build the site (every chapter executed; warnings are errors).
book: $(STAMP)
	set -o pipefail; $(VENV)/bin/jupyter-book build . -n -W --keep-going 2>&1 | tee _build.log
	@echo "Built: open $(CURDIR)/_build/html/index.html"

## Run every test, then execute every chapter as a notebook (nbmake).
test: $(STAMP)
	rm -rf $(NBDIR) && mkdir -p $(NBDIR)
	for f in chapters/*.md; do $(VENV)/bin/jupytext --quiet --to ipynb -o $(NBDIR)/$$(basename $$f .md).ipynb $$f || exit 1; done
	$(PY) -m pytest tests $(NBDIR) --nbmake --nbmake-timeout=300

## Open the chapters as notebooks in JupyterLab.
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.json
lab: $(STAMP)
	$(PY) -m pip install --quiet jupyterlab
	mkdir -p $(dir $(LAB_SETTINGS))
	echo '{"@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"markdown": "Jupytext Notebook", "myst": "Jupytext Notebook"}}}' > $(LAB_SETTINGS)
	$(VENV)/bin/jupyter lab chapters/

## Time the model and each chapter (a benchmark, not a test).
bench: $(STAMP)
	$(PY) tests/benchmark.py

clean:
	rm -rf _build _build.log .nbtest
