# Everything a fresh machine needs: `make run` (the server alone) and `make test` (everything).
# `make run ARGS="--listen 127.0.0.1:0 --placer legacy"` passes options to `placement-sim serve`.
PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
RUNTIME := $(VENV)/.runtime
STAMP   := $(VENV)/.installed
ARGS    ?=

.PHONY: run dev test test-newest lint bench bytecode system-deps reference npm clean

# Debian packages the project needs: Java 17 (a JDK: PySpark, and the reference harness's Java programs),
# Maven (Apache Kafka's jars for the reference harness), Go where the machine has none (the reference
# harness's franz-go programs; harness/go/go.mod names the least version), kcat and node with npm for the
# real-client tests (kafkajs), Chromium for the test that lays the sweep's report out in a browser.
system-deps:
	@need=""; \
	command -v java >/dev/null 2>&1 && java -version 2>&1 | grep -qE 'version "(1[7-9]|2[0-9])' || need="$$need openjdk-17-jre-headless"; \
	command -v javac >/dev/null 2>&1 || need="$$need openjdk-17-jdk-headless"; \
	command -v mvn >/dev/null 2>&1 || need="$$need maven"; \
	command -v kcat >/dev/null 2>&1 || need="$$need kcat"; \
	command -v $(GO) >/dev/null 2>&1 || need="$$need golang-go"; \
	command -v npm >/dev/null 2>&1 || need="$$need nodejs npm"; \
	command -v chromium >/dev/null 2>&1 || need="$$need chromium"; \
	if [ -n "$$need" ]; then \
	  echo "installing Debian packages:$$need"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends $$need; \
	fi

# The editable install is a .pth file naming the checkout (pyproject.toml's package-dir), not an import
# hook: the hook would cost every process time at start.
# What `serve` needs: the project and its dependencies, no PySpark, no test tools.
$(RUNTIME): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $(RUNTIME)

# Everything: the test tools, PySpark, the TLS test certificates (the `test` extra).
$(STAMP): $(RUNTIME)
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

# A development environment in .venv without running anything: the project (editable), its pytest plugin
# with pytest and pytest-asyncio, the real clients, PySpark and ruff (the `test` extra). A user's own
# project gets the plugin with `pip install 'placement-sim[pytest]'` (docs/integration-tests.md).
dev: $(STAMP) bytecode

# The project's modules compiled ahead (as pip compiles installed packages): a server starts without
# compiling its sources, even where PYTHONDONTWRITEBYTECODE is set.
bytecode: $(RUNTIME)
	@$(BIN)/python -m compileall -q controller protocol placement_sim >/dev/null

# The reference harness (test and benchmark only): Apache Kafka's jars at the version pinned in
# harness/kafka/pom.xml, from Maven Central into a project-local cache (its own local repository too).
CACHE     := .cache/reference
KAFKA_LIB := $(CACHE)/kafka/lib
MVN       ?= mvn

# Each step builds into a new folder and renames it over the old one when it succeeded: a failed or
# interrupted fetch or build leaves the last good one in place (tests running meanwhile keep their jars).
$(KAFKA_LIB)/.fetched: harness/kafka/pom.xml
	rm -rf $(KAFKA_LIB).new
	$(MVN) -q -B -f harness/kafka/pom.xml dependency:copy-dependencies \
	  -Dmaven.repo.local=$(abspath $(CACHE))/m2 -DoutputDirectory=$(abspath $(KAFKA_LIB)).new
	touch $(KAFKA_LIB).new/.fetched
	rm -rf $(KAFKA_LIB).old && { ! test -d $(KAFKA_LIB) || mv $(KAFKA_LIB) $(KAFKA_LIB).old; } \
	  && mv $(KAFKA_LIB).new $(KAFKA_LIB) && rm -rf $(KAFKA_LIB).old

# The harness's own Java programs (harness/java/), compiled against those jars into the cache.
JAVA_SRC     := $(shell find harness/java -name '*.java' 2>/dev/null)
JAVA_CLASSES := $(CACHE)/java

$(JAVA_CLASSES)/.built: $(KAFKA_LIB)/.fetched $(JAVA_SRC)
	rm -rf $(JAVA_CLASSES).new && mkdir -p $(JAVA_CLASSES).new
	javac -nowarn -encoding UTF-8 --release 17 -cp '$(KAFKA_LIB)/*' -d $(JAVA_CLASSES).new $(JAVA_SRC)
	touch $(JAVA_CLASSES).new/.built
	rm -rf $(JAVA_CLASSES).old && { ! test -d $(JAVA_CLASSES) || mv $(JAVA_CLASSES) $(JAVA_CLASSES).old; } \
	  && mv $(JAVA_CLASSES).new $(JAVA_CLASSES) && rm -rf $(JAVA_CLASSES).old

# The reference cluster's log binding (harness/kafka/logging/pom.xml), on the brokers' class path only.
KAFKA_LOGGING := $(CACHE)/kafka/logging

$(KAFKA_LOGGING)/.fetched: harness/kafka/logging/pom.xml
	rm -rf $(KAFKA_LOGGING).new
	$(MVN) -q -B -f harness/kafka/logging/pom.xml dependency:copy-dependencies \
	  -Dmaven.repo.local=$(abspath $(CACHE))/m2 -DoutputDirectory=$(abspath $(KAFKA_LOGGING)).new
	touch $(KAFKA_LOGGING).new/.fetched
	rm -rf $(KAFKA_LOGGING).old && { ! test -d $(KAFKA_LOGGING) || mv $(KAFKA_LOGGING) $(KAFKA_LOGGING).old; } \
	  && mv $(KAFKA_LOGGING).new $(KAFKA_LOGGING) && rm -rf $(KAFKA_LOGGING).old

# The Go side (harness/go, one module: franz-go's kgo, kadm and kfake at the versions go.mod pins): its
# programs built into $(GO_BIN). The module cache, the build cache and the binaries stay in the project
# (GOMODCACHE, GOCACHE); the machine's own Go toolchain builds it (GOTOOLCHAIN=local: go.mod's version or
# newer, which `make system-deps` checks).
GO        ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
GO_CACHE  := $(CACHE)/go
GO_BIN    := $(GO_CACHE)/bin
GO_ENV    := GOMODCACHE=$(abspath $(GO_CACHE))/mod GOCACHE=$(abspath $(GO_CACHE))/build \
             GOFLAGS="-modcacherw -buildvcs=false" GOTOOLCHAIN=local GOWORK=off
GO_SOURCES := harness/go/go.mod harness/go/go.sum $(shell find harness/go -name '*.go' 2>/dev/null)

$(GO_BIN)/.built: $(GO_SOURCES)
	cd harness/go && $(GO_ENV) $(GO) build -trimpath -o $(abspath $(GO_BIN))/ ./cmd/...
	touch $@

reference: $(KAFKA_LIB)/.fetched $(KAFKA_LOGGING)/.fetched $(JAVA_CLASSES)/.built $(GO_BIN)/.built

# kafkajs for the real-client tests (tests/clients/test_transactions_kafkajs.py), from the npm registry
# into a project-local cache; the tests run node with NODE_PATH there.
NPM_CACHE       := .cache/npm
KAFKAJS_VERSION := 2.2.4

$(NPM_CACHE)/.installed:
	npm install --prefix $(NPM_CACHE) --no-save --no-audit --no-fund --loglevel=error kafkajs@$(KAFKAJS_VERSION)
	touch $@

npm: $(NPM_CACHE)/.installed

run: $(RUNTIME) bytecode
	$(BIN)/placement-sim serve $(ARGS)

# The suite in two passes: most of it on two workers (pytest-xdist; tests/conftest.py says how they share
# it: a file's tests together, the Spark and real-Kafka tests each on one worker), then the tests marked
# `alone` (they measure how long other clients wait) with nothing beside them. PYTEST_ADDOPTS reaches both.
test: system-deps $(STAMP) bytecode reference npm
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m 'not alone'
	$(BIN)/python -m pytest -q -m alone

TEST_WORKERS ?= 2

# The newest Python 3.11+ found, on the PATH or installed by pyenv (a pyenv shim of a version that is not
# selected does not run, so each candidate is tried): `make test-newest` runs the tests on it in a venv of
# its own, so that a newer interpreter's changes (Debian 13's python3 is 3.13) show before users meet them.
NEWEST_PYTHON ?= $(shell for v in 3.15 3.14 3.13 3.12 3.11; do 	for p in $$(command -v python$$v) $$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$$v*/bin/python$$v 2>/dev/null | sort -rV); do 	  $$p -c '' >/dev/null 2>&1 && { echo $$p; exit 0; }; 	done; done)
NEWEST_VENV := .venv-newest

$(NEWEST_VENV)/.installed: pyproject.toml setup.py
	@test -n "$(NEWEST_PYTHON)" || { echo "no Python 3.11 or newer found"; exit 1; }
	$(NEWEST_PYTHON) -m venv $(NEWEST_VENV)
	$(NEWEST_VENV)/bin/pip install -q --upgrade pip
	$(NEWEST_VENV)/bin/pip install -q -e '.[test]'
	touch $@

# Every test but the real-client ones (tests/clients/) and the differential ones against a real Kafka
# (tests/differential/: minutes of CI), which `make test` runs; in the two passes `make test` makes (the
# suite on one worker took 23 minutes of CI's 45). When the newest Python is the one `make test` runs on
# (.venv's, else $(PYTHON)), the suite has run on it already: said, not rerun.
NEWEST_SKIP := --ignore=tests/clients --ignore=tests/differential
TESTED_PYTHON = $(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON))
PY_VERSION := import sys; print(sys.version.split()[0], sys.implementation.name)
test-newest:
	@test -n "$(NEWEST_PYTHON)" || { echo "no Python 3.11 or newer found"; exit 1; }
	@newest="$$($(NEWEST_PYTHON) -c '$(PY_VERSION)')"; tested="$$($(TESTED_PYTHON) -c '$(PY_VERSION)' 2>/dev/null)"; \
	if [ "$$newest" = "$$tested" ]; then \
	  echo "test-newest: the newest Python found ($(NEWEST_PYTHON), $$newest) is the one \`make test\` runs on: nothing more to run"; \
	else \
	  $(MAKE) --no-print-directory system-deps $(NEWEST_VENV)/.installed && \
	  $(NEWEST_VENV)/bin/python --version && \
	  $(NEWEST_VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m 'not alone' $(NEWEST_SKIP) && \
	  $(NEWEST_VENV)/bin/python -m pytest -q -m alone $(NEWEST_SKIP); \
	fi

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(STAMP) bytecode
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) $(NEWEST_VENV) build *.egg-info .cache
