# The two commands of the quick start: `make serve` and `make test`.
# Each creates .venv and installs what it needs (re-installing only when setup.cfg changes).
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin

.PHONY: serve test bench clean browser

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-serve: setup.cfg pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: setup.cfg pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed-serve

serve: $(VENV)/.installed-serve
	$(BIN)/gunicorn -c gunicorn.conf.py --access-logfile - wsgi:application

test: $(VENV)/.installed-test browser
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The browser test drives Debian's chromium (no browser download is possible, so not
# `playwright install`). Installed once when missing, as root with apt; the package lists are
# refreshed only if the first try fails. Otherwise the test skips with the reason (fails in CI).
APT_INSTALL = DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  -o DPkg::Lock::Timeout=300
browser:
	@command -v chromium >/dev/null 2>&1 || [ "$$(id -u)" != 0 ] \
	  || ! command -v apt-get >/dev/null 2>&1 \
	  || $(APT_INSTALL) chromium || { apt-get update -q && $(APT_INSTALL) chromium; } \
	  || echo "make: could not install chromium; the browser test will say why"

bench: $(VENV)/.installed-test
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
