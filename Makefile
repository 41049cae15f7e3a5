# The two commands of the quick start: `make serve` and `make test`.
# Each creates .venv and installs what it needs (re-installing only when setup.cfg changes).
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin

.PHONY: serve test bench clean tools

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-serve: setup.cfg pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: setup.cfg pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed-serve

# The relay beside it (cron/relay.py) lets in only the conversations the host pairs
# (NEWOS4_RELAY_ACCESS=pairing, the default; scripts/chat.py pairing approve CODE).
serve: $(VENV)/.installed-serve
	$(BIN)/gunicorn -c gunicorn.conf.py --access-logfile - wsgi:application

# Most of the suite's time is spent waiting on servers and subprocesses, so three xdist
# workers beat two on two cores. loadfile: a file's tests run in order on one worker (some
# build on the ones before them) and its module servers start once. PYTEST_ARGS comes after.
PYTEST_WORKERS ?= -n 3 --dist loadfile
test: $(VENV)/.installed-test tools
	$(BIN)/python -m pytest $(PYTEST_WORKERS) $(PYTEST_ARGS)

# The browser test drives Debian's chromium (no browser download is possible, so not
# `playwright install`); the deploy tests run real nginx and logrotate; the GitHub emulator's
# GraphQL tests run Debian's `gh`. Each missing one is
# installed once, as root with apt; the package lists are refreshed only if the first try
# fails. Otherwise those tests skip with the reason (in CI they fail instead).
APT_INSTALL = DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  -o DPkg::Lock::Timeout=300
TEST_TOOLS = chromium nginx logrotate gh
tools:
	@missing=$$(for t in $(TEST_TOOLS); do command -v $$t >/dev/null 2>&1 \
	  || [ -x /usr/sbin/$$t ] || echo $$t; done | tr '\n' ' '); \
	[ -z "$$missing" ] || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1 \
	  || $(APT_INSTALL) $$missing || { apt-get update -q && $(APT_INSTALL) $$missing; } \
	  || echo "make: could not install$$missing; their tests will say why"

bench: $(VENV)/.installed-test
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
