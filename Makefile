# Everything a fresh machine needs: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench bytecode system-deps clean

# Debian packages the project needs: Java 17 for PySpark, kcat for the real-client tests, Chromium for
# the test that lays the sweep's report out in a browser.
system-deps:
	@need=""; \
	command -v java >/dev/null 2>&1 && java -version 2>&1 | grep -qE 'version "(1[7-9]|2[0-9])' || need="$$need openjdk-17-jre-headless"; \
	command -v kcat >/dev/null 2>&1 || need="$$need kcat"; \
	command -v chromium >/dev/null 2>&1 || need="$$need chromium"; \
	if [ -n "$$need" ]; then \
	  echo "installing Debian packages:$$need"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends $$need; \
	fi

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# compat: the checkout on sys.path, not an import hook (the hook costs every process ~70 ms at start)
	$(BIN)/pip install -q -e '.[test]' --config-settings editable_mode=compat
	touch $(STAMP)

# The project's modules compiled ahead (as pip compiles installed packages): a server starts without
# compiling its sources, even where PYTHONDONTWRITEBYTECODE is set.
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q controller protocol placement_sim >/dev/null

run: system-deps $(STAMP) bytecode
	$(BIN)/placement-sim serve

test: system-deps $(STAMP) bytecode
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(STAMP) bytecode
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
