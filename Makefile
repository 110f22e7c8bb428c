# Two commands do all set-up on a fresh machine:
#   make demo   — create .venv if missing, install (with Debian chromium for PNG/SVG export, as root), serve the viewer
#   make test   — create .venv if missing, install (with Debian chromium for the browser tests), check the style
#                 (ruff check, ruff format --check), run the tests
# Both are idempotent. torch==2.13.0 is installed first where no torch is present (a CPU wheel on
# this project's machines); an existing torch (e.g. a CUDA build on a GPU machine) is kept.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.sss-viewer-installed

PORT ?= 5006
BROWSER_STAMP := $(VENV)/.sss-viewer-browser

.PHONY: setup browser demo lint test test-fast bench bench-env notebook clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

setup: $(STAMP)

# Debian chromium for the browser tests and PNG/SVG export (driven by Playwright); needs root (as in
# CI). Without it the browser tests skip with a reason and PNG/SVG export is refused with a reason
# (HTML export needs no browser).
$(BROWSER_STAMP): $(STAMP)
	@if command -v chromium >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "note: chromium not installed (need root): browser tests will be skipped"; fi
	@touch $(BROWSER_STAMP)

browser: $(BROWSER_STAMP)

demo: setup browser
	$(VENV)/bin/panel serve app.py --port $(PORT) --address 127.0.0.1 --allow-websocket-origin=127.0.0.1:$(PORT) --allow-websocket-origin=localhost:$(PORT)

# the style the repository configures (pyproject's [tool.ruff]), checked before the tests run
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test: setup browser lint
	BOKEH_IN_DOCKER=1 $(PY) -m pytest

test-fast: setup
	BOKEH_IN_DOCKER=1 $(PY) -m pytest -m "not slow and not browser"

# JupyterLab on the quickstart notebook, loopback only (the notebook opens patient data).
notebook: setup
	$(VENV)/bin/jupyter lab notebooks/quickstart.ipynb --ip 127.0.0.1 --port 8888 --no-browser

bench: setup
	$(PY) benchmarks/throughput.py

# aeon, the reference MiniRocket of benchmarks/minirocket_features.py, in an environment of its own:
# its pins would move numpy, numba and pandas under sss-viewer. Never a dependency of the product.
bench-env:
	@test -x .venv-aeon/bin/python || $(PYTHON) -m venv .venv-aeon
	.venv-aeon/bin/python -m pip install -q "aeon==1.6.0"

clean:
	rm -rf $(VENV) .venv-aeon demo_output .pytest_cache
