"""What a plugin leaves out falls back: no NPU lowering runs its integer op on the host, no
quantization rule or integer kernel keeps it float on the host; a broken plugin is a
one-line diagnostic naming it (tests/plugins/variants, one at a time)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from compile_helpers import assert_not_degenerate, assert_same, compile_and_run, quantize_float
from plugin_variants import MODEL, variant_env
from tool_runner import run_tool
from xdsl.dialects.builtin import ModuleOp

import npuc
from npuc.diagnostics import NpucError
from npuc.dialects.npu_isa import Program
from npuc.runtime.host_cost import share
from npuc.runtime.qnn_interpreter import random_inputs, run_module

UseVariant = Callable[[str | None], None]


def host_ops(program: Program) -> list[tuple[str, str, str]]:
    """(layer, op, reason) of every op the program runs on the host."""
    return [(layer, op.name, op.reason) for layer, op in share(program).host]


def compiled_bit_exact(seed: int) -> tuple[ModuleOp, Program]:
    """The example model quantized (with the installed plugin) and compiled for the Ethos-U55,
    its binary checked against the qnn interpreter on seeded inputs."""
    quantized = quantize_float(npuc.load_model(MODEL))
    inputs = random_inputs(quantized, seed=seed)
    reference = run_module(quantized, inputs)
    assert_not_degenerate(reference)
    outputs, program = compile_and_run(
        quantized, "ethos-u55-256-hee", "performance", inputs, host="all"
    )
    assert_same(reference, outputs)
    return quantized, program


def test_without_a_lowering_the_table_runs_on_the_host_bit_exact(use_variant: UseVariant):
    use_variant("host_table")
    _, program = compiled_bit_exact(seed=3)
    assert not [i for i in program.instructions if i.op == "lut"]
    assert host_ops(program) == [
        ("soft_clip1", "example.qsoft_clip", "no NPU instruction"),
        ("soft_clip2", "example.qsoft_clip", "no NPU instruction"),
    ]


def test_without_a_lowering_host_float_refuses_the_integer_op(use_variant: UseVariant):
    use_variant("host_table")
    quantized = quantize_float(npuc.load_model(MODEL))
    with pytest.raises(NpucError, match=re.escape("'example.qsoft_clip' (layer 'soft_clip1')")):
        compile_and_run(quantized, "mcu-64", "performance", random_inputs(quantized), "float")


def test_without_an_integer_kernel_the_op_stays_float_on_the_host(use_variant: UseVariant):
    use_variant("float_only")
    quantized, program = compiled_bit_exact(seed=4)
    names = [op.name for op in quantized.walk()]
    assert names.count("example.soft_clip") == 2 and "example.qsoft_clip" not in names
    assert names.count("qnn.dequantize") == 2 and names.count("qnn.quantize") >= 2
    ops = host_ops(program)
    assert ("soft_clip1", "example.soft_clip", "float input or output") in ops
    assert ("soft_clip2", "example.soft_clip", "float input or output") in ops
    # the plugin's cost entry prices the float op on the host: 16 MACs an element
    macs = {layer: op.macs for layer, op in share(program).host if op.name == "example.soft_clip"}
    assert macs == {"soft_clip1": 16 * 8 * 16 * 16, "soft_clip2": 16 * 8 * 8 * 8}


def test_float_only_plugin_layer_report_says_why(use_variant: UseVariant):
    use_variant("float_only")
    from npuc.passes.quantization.datasets import random_dataset
    from npuc.passes.quantize import QuantizeConfig
    from npuc.quantize_flow import calibrate, quantize

    module = npuc.load_model(MODEL)
    statistics = calibrate(module, random_dataset(module, 2, seed=0), progress=False)
    _, report = quantize(module, statistics, QuantizeConfig(scheme="int8"))
    layer = report.layers["soft_clip1"]
    assert layer.mode == "float"
    assert layer.reason == "plugin 'example' gives no quantization rule for example.soft_clip"


@pytest.mark.parametrize(
    ("variant", "message"),
    [
        (
            "broken_import",
            "example.py: error: plugin 'example': cannot be loaded: ModuleNotFoundError: "
            "No module named 'npuc_example_ops_missing_dependency'",
        ),
        (
            "bad_descriptor",
            "example.py: error: plugin 'example': bad descriptor: `kernels` key 'nn.relu' is "
            "not an op of the plugin's dialect 'example'",
        ),
    ],
)
def test_a_broken_plugin_is_one_diagnostic_naming_it(variant: str, message: str):
    done = run_tool("npu-opt", MODEL, env=variant_env(variant))
    assert done.returncode == 1
    assert done.stderr.startswith("npu-opt: ") and done.stderr.endswith(message + "\n")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_a_fault_in_a_plugin_kernel_names_the_plugin_op_and_line():
    done = run_tool("npu-run", MODEL, env=variant_env("faulty_kernel"))
    assert done.returncode == 1
    error = done.stderr.splitlines()[-1]
    assert error == (
        f"npu-run: {variant_env('faulty_kernel')['NPUC_PLUGIN_PATH']}/example.py:11: error: "
        "plugin 'example': the kernel of 'example.soft_clip' (layer 'soft_clip1') failed: "
        "ZeroDivisionError: integer division or modulo by zero"
    )
    assert "Traceback" not in done.stderr
    debug = run_tool("npu-run", MODEL, "--debug", env=variant_env("faulty_kernel"))
    assert debug.returncode == 1
    assert "Traceback" in debug.stderr and "in broken_soft_clip" in debug.stderr


def test_list_plugins_shows_a_broken_plugin_and_what_failed():
    done = run_tool("npu-opt", "--list-plugins", env=variant_env("broken_import"))
    assert done.returncode == 0, done.stderr
    assert "(ignored: NPUC_NO_PLUGIN_ENTRY_POINTS is set)" in done.stdout
    assert "\n  broken: " in done.stdout and "ModuleNotFoundError" in done.stdout
    done = run_tool("npu-opt", "--list-plugins", env=variant_env(None))
    assert done.stdout.endswith("no plugins installed\n")
