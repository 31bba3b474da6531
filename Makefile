# Everything a fresh machine needs: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench system-deps clean

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
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

run: system-deps $(STAMP)
	$(BIN)/placement-sim serve

test: system-deps $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(STAMP)
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
