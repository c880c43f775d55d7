# npuc: `make demo` sets everything up and compiles and runs the example; `make test` runs every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint filecheck pytest bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "npuc needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $@

setup: $(STAMP)

demo: setup
	@mkdir -p out
	$(BIN)/npu-compile examples/lenet5.onnx --target mcu-64 --calib-random 32 -o out/lenet5
	$(BIN)/npu-run out/lenet5/lenet5.npubin --profile

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

filecheck: setup
	$(BIN)/lit -sv filecheck

pytest: setup
	$(BIN)/pytest -q

# Lint and FileCheck first, so pytest's summary is the closing line.
test: lint filecheck pytest

bench: setup
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	PYTHONPATH=tests $(BIN)/python tests/bench/bench_interpreter.py
	PYTHONPATH=tests $(BIN)/python tests/bench/bench_quantization.py
	PYTHONPATH=tests $(BIN)/python tests/bench/bench_tflite.py
	PYTHONPATH=tests $(BIN)/python tests/bench/bench_memory_plan.py
	PYTHONPATH=tests $(BIN)/python tests/bench/bench_plan_memory.py
	PYTHONPATH=tests $(BIN)/python tests/bench/bench_runtime.py
	PYTHONPATH=tests $(BIN)/python tests/bench/bench_vela.py

clean:
	rm -rf $(VENV) out build *.egg-info
