# The two commands of the README: `make book` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SHELL := /bin/bash

.PHONY: book test test-fast screenshots lab bench mutation notebooks moved reports clean gpu-check

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "Python 3.10+ is needed; set PYTHON=python3.x")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -e .
	-$(PY) -m gpumodel.lab  # the kernel lab's runtimes and precompiled header, so a first trace is quick
	touch $@

## Build the site (every chapter executed; warnings are errors).
book: $(STAMP)
	set -o pipefail; GPUMODEL_BUILD=book $(VENV)/bin/jupyter-book build . -n -W --keep-going 2>&1 | tee _build.log
	@echo "Built: open $(CURDIR)/_build/html/index.html"

## Run every test, on one worker per core (at most 4): the slow ones too, which build the site
## and test it in a browser, execute every learners' notebook in fresh Colab-like and Binder
## environments, and run two in JupyterLab. Each keeps its environment on one worker.
WORKERS ?= $(shell $(PYTHON) -c 'import os; print(min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))')
test: $(STAMP)
	$(PY) -m pytest -n $(WORKERS) --dist loadgroup --durations=20 tests

## The loop of a change (1 min 44 s on 2 cores): every test but those marked slow.
test-fast: $(STAMP)
	$(PY) -m pytest -n $(WORKERS) --dist loadgroup -m "not slow" tests

## Every page whole at 390 and 1400 px and every figure as shown, in _build/screenshots/, from
## the browser test's visits of the built site (built first where there is none).
screenshots: $(STAMP)
	test -f _build/html/intro.html || $(MAKE) book
	FULL_SCREENSHOTS=1 BUILT_SITE=_build/html $(PY) -m pytest -q -p no:cacheprovider tests/test_browser.py -k "every_page or every_figure or on_a_phone_every"

## Regenerate notebooks/*.ipynb from chapters/*.md, each chapter executed once for its numbers
## (a test fails when they are out of date); CHAPTERS="09_decode 03_tiling" redoes only those.
notebooks: $(STAMP)
	$(PY) -m gpumodel.book.notebooks $(CHAPTERS)

## List the glued numbers a change to the data or the model moves, chapter by chapter (each
## chapter executed; nothing written); CHAPTERS="..." to look at some only.
moved: $(STAMP)
	$(PY) -m gpumodel.book.notebooks --moved $(CHAPTERS)

## Record the compiler report of every kernel (registers, spills, SASS counts; NVRTC and nvdisasm, no GPU) in
## gpumodel/data/compiler_reports.json, shown where no compiler is found (a test fails when it is stale).
reports: $(STAMP)
	$(PY) -m gpumodel.cuda.compiler

## The first minutes on a GPU (README, "On a GPU"): environment, every kernel compiled, the GPU
## tests, vector add at three sizes, validate quick and full; each step under its own limit.
## Installs nothing (no $(STAMP)): the Python of .venv where there is one, else $(PYTHON). Writes
## one archive to $(GPU_CHECK_OUT), outside the checkout. On a T4: GPU_CHECK_ARGS=--limit-scale=1.6
GPU_CHECK_OUT ?= $(HOME)/gpu-check
gpu-check:
	$(if $(wildcard $(PY)),$(PY),$(PYTHON)) -B -m gpumodel.cuda.gpu_check --out $(GPU_CHECK_OUT) $(GPU_CHECK_ARGS)

## Open the learners' notebooks in JupyterLab.
lab: $(STAMP)
	$(PY) -m pip install --quiet jupyterlab
	$(VENV)/bin/jupyter lab $$([ "$$(id -u)" = 0 ] && echo --allow-root) notebooks/

## The slowest accepted call of every public function, then the model and each chapter, timed,
## then (where `make book` has built the site) each page's longest main-thread task on a phone
## (a benchmark, not a test).
bench: $(STAMP)
	$(PY) tests/benchmark.py
	$(if $(wildcard _build/html/index.html),$(PY) tests/benchmark.py --site _build/html --repeats 3)

## Mutation testing (a benchmark, not part of `make test`): mutmut (pyproject's [tool.mutmut]) mutates
## the core modules, runs the fast tests that reach each mutant, and prints the score per module
## (tests/mutation_report.py; equivalent mutants are listed, with a reason each, in
## tests/equivalent_mutants.txt). The core alone took 9 to 16 minutes on 2 shared cores; expected.py adds 1,181
## mutants (450 of them took 20 minutes with only its own tests selected); MODULES="units model" runs a subset.
## Then the kernel lab's hand-made mutants (tests/lab_mutants.py, of the lab's rooms, its C++ runtime, the
## Triton lab (triton_trace, triton_adapter), the whole program's runner and the reader's launches: mutmut
## does not run over these, whose tests build C++ or run Triton's interpreter), each killed by the test that
## names it, with a score per mutated file.
MODULES ?= _check units kernel_info hardware presets workloads model simulate occupancy waves tiles published expected decode \
	course.capstone collectives parallel estimates course.progress_file book.chapter
mutation: $(STAMP)
	$(PY) -m pip install --quiet mutmut==3.8.1
	rm -rf mutants
	set -o pipefail; $(VENV)/bin/mutmut run $(foreach m,$(MODULES),"gpumodel.$(m).*") | grep --line-buffered -v '^🎉'
	$(PY) tests/mutation_report.py $(MODULES)
	$(PY) tests/lab_mutants.py

clean:
	rm -rf _build _build.log build
