# `make run` and `make test` are the two commands a fresh machine needs.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 9092
DATA   ?= ./data

.PHONY: run test test-fast typecheck lint docs docs-serve bench chaos install install-test system-deps reference clean bytecode

# setup.py maps broker/, protocol/, client/, pipeline/ under the weir namespace and builds the
# C extensions (protocol/*.c, pipeline/*.c) into the source tree.
$(VENV)/.installed: pyproject.toml setup.py $(wildcard protocol/*.[ch] client/*.[ch])
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[test,pipeline,docs]'
	touch $@

$(VENV)/.installed-docs: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[docs]'
	touch $@

# kcat (librdkafka 2.0.2) is the old-librdkafka client the compatibility tests drive;
# Java and Maven run the reference Apache Kafka (tests/reference/); node runs pyright (tests/docs); Go
# runs the fault-injection example (tests/faults; the machine image has one, Debian's is the fallback).
system-deps:
	@command -v kcat >/dev/null && command -v javac >/dev/null && command -v mvn >/dev/null \
	  && command -v fusermount3 >/dev/null && command -v node >/dev/null && command -v go >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq kcat openjdk-17-jdk-headless maven fuse3 nodejs \
	    $$(command -v go >/dev/null || echo golang-go); }

# Apache Kafka's jars (version pinned in reference/pom.xml) into the local Maven cache, our
# Java test programs (reference/src/main/java) compiled, and the jars' classpath written to
# $(REFERENCE_CP); Spark's Kafka connector (reference/spark/pom.xml) and MirrorMaker 2
# (reference/mirror/pom.xml, tests/mirror) likewise; Apicurio Registry's runnable application
# (reference/apicurio/pom.xml, for tests/schema_registry) unpacked.
# reference/kafka.py, reference/spark.py and reference/apicurio.py rebuild on their own when a source is newer.
REFERENCE_CP := reference/target/classpath.txt
reference: system-deps
	mvn -q -B -Dstyle.color=never -f reference/pom.xml compile dependency:build-classpath -Dmdep.outputFile=$(CURDIR)/$(REFERENCE_CP)
	touch $(REFERENCE_CP)
	mvn -q -B -Dstyle.color=never -s reference/spark/settings.xml -f reference/spark/pom.xml \
	  dependency:build-classpath -Dmdep.outputFile=$(CURDIR)/reference/spark/target/classpath.txt
	touch reference/spark/target/classpath.txt
	mvn -q -B -Dstyle.color=never -f reference/apicurio/pom.xml dependency:unpack
	touch reference/apicurio/target/quarkus-app/quarkus-run.jar
	mvn -q -B -Dstyle.color=never -f reference/mirror/pom.xml \
	  dependency:build-classpath -Dmdep.outputFile=$(CURDIR)/reference/mirror/target/classpath.txt
	touch reference/mirror/target/classpath.txt

$(VENV)/.installed-bench: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[bench]'
	touch $@

# Our sources' bytecode, as a wheel install leaves it: with PYTHONDONTWRITEBYTECODE set nothing else
# writes it, and every broker and tool started would compile ~300 modules again (~0.25 s a start).
bytecode: $(VENV)/.installed
	$(PY) -m compileall -q protocol broker client pipeline weir

install: $(VENV)/.installed bytecode
install-test: $(VENV)/.installed-test system-deps reference bytecode

run: $(VENV)/.installed
	$(PY) -m weir.broker --host $(HOST) --port $(PORT) --data-dir $(DATA)

test: $(VENV)/.installed-test system-deps reference typecheck lint docs bytecode
	$(PY) -m pytest -q

# mypy ([tool.mypy] in pyproject.toml: strict on weir.protocol and weir.client, the default checking elsewhere).
# It reads weir.* from the source tree through weir/'s committed symlinks (weir/broker -> ../broker, ...),
# as pyright and editors do. A few seconds with its cache (build/mypy_cache).
typecheck: $(VENV)/.installed-test
	$(VENV)/bin/mypy

# ruff ([tool.ruff] in pyproject.toml) over every folder of Python the project holds.
lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check protocol broker client pipeline weir bench reference tests examples docs chaos

# The documentation site (mkdocs.yml) into build/site, strict: a broken link, a missing reference or a
# warning fails it. docs/generate.py first writes the generated pages (configuration and metrics references,
# weir-admin) and refuses an undocumented public name of weir.client. tests/docs runs every example.
DOCS_ENV := NO_MKDOCS_2_WARNING=1
docs: $(VENV)/.installed-docs
	$(PY) docs/generate.py
	$(DOCS_ENV) $(VENV)/bin/mkdocs build --strict --quiet

docs-serve: $(VENV)/.installed-docs
	$(PY) docs/generate.py
	$(DOCS_ENV) $(VENV)/bin/mkdocs serve

# Codecs, log, coordinators and handlers, with no broker process
# (tests/broker_process.py refuses to start one under WEIR_TEST_FAST), in under a minute: 1,487 tests on
# two xdist workers, 49 s of pytest on 2 cores (64 s before the codec round trips drew 20 instances of
# each message version here instead of make test's 40).
FAST_TESTS := tests/protocol tests/log tests/txn tests/group tests/server tests/metrics \
	tests/client/test_partitioner.py tests/client/test_transaction_manager.py \
	tests/client/test_cluster_dial.py tests/client/test_admin_routing.py \
	tests/client/test_list_offsets_retry.py tests/client/test_errors.py tests/client/test_coordinator_loading.py \
	tests/features/test_finalized_features.py \
	tests/testing/test_container_api.py tests/security/test_security_units.py \
	tests/client/test_security_options.py tests/security/test_acl_units.py tests/security/test_delegation_token_units.py \
	tests/client/test_membership_states.py tests/client/test_connection_wire.py tests/bench tests/quota \
	tests/faults/test_fault_table.py tests/chaos/test_checker.py
test-fast: $(VENV)/.installed-test typecheck lint
	WEIR_TEST_FAST=1 $(PY) -m pytest -q -n 2 $(FAST_TESTS)

# Every benchmark at reduced sizes, one round each (bench/report.py's "make" profile, under 15 minutes):
# bench/results/<date>.json and the charts README.md shows. Each bench alone: python -m bench.<name>.
bench: $(VENV)/.installed-bench
	$(PY) -m bench.report --profile make

# Weir's chaos campaign (chaos/run.py; not part of make test, which runs a 40 s one): transactional, consume-
# transform-produce and share group clients under broker kill -9, pauses, error storms, a full and a slow disk
# and power cuts (FUSE) and client kills, then the checker; report and chart in bench/results/.
# CHAOS_SECONDS=600 by default.
chaos: $(VENV)/.installed-test
	$(PY) -m chaos.run --fuse --out bench/results

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info reference/target reference/mirror/target reference/apicurio/target
