# Two commands do all set-up on a fresh machine:
#   make demo   — create .venv if missing, install, run the main job
#   make test   — create .venv if missing, install, run the tests
# Both are idempotent. torch==2.13.0 is installed first where no torch is present (a CPU wheel on
# this project's machines); an existing torch (e.g. a CUDA build on a GPU machine) is kept.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.sss-viewer-installed

.PHONY: setup demo test test-fast bench clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(VENV)/bin/sss-viewer demo

test: setup
	$(PY) -m pytest

test-fast: setup
	$(PY) -m pytest -m "not slow"

bench: setup
	$(PY) benchmarks/throughput.py

clean:
	rm -rf $(VENV) demo_output .pytest_cache
