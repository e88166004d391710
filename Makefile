# `make run` and `make test` are the two commands a fresh machine needs.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 9092
DATA   ?= ./data

.PHONY: run test bench install install-test system-deps clean

# setup.py builds the C record walk (protocol/_record_scan.c) into the source tree.
$(VENV)/.installed: pyproject.toml setup.py protocol/_record_scan.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[test,pipeline]'
	touch $@

# kcat (librdkafka 2.0.2) is the old-librdkafka client the compatibility tests drive.
system-deps:
	@command -v kcat >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq kcat; }

$(VENV)/.installed-bench: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[bench]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test system-deps

run: $(VENV)/.installed
	$(PY) -m broker --host $(HOST) --port $(PORT) --data-dir $(DATA)

test: $(VENV)/.installed-test system-deps
	$(PY) -m pytest -q

bench: $(VENV)/.installed-bench
	$(PY) -m bench.throughput
	$(PY) -m bench.transactions
	$(PY) -m bench.pipeline

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
