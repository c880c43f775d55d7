"""A bug in npuc is an internal error (exit 70, what npuc was doing, traceback with --debug);
a user error stays a diagnostic (exit 1, no traceback). The bugs are provoked by patching
an internal function to raise, in-process or in a subprocess running the tool's main."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tool_runner import EXAMPLE, RELU_MLIR, REPO, run_tool

from npuc.tools import npu_bundle, npu_compile, npu_opt, npu_run

LENET = REPO / "examples" / "lenet5.onnx"


def run_main(main, argv: list[str], capsys) -> tuple[int, str]:
    """Run a tool's main in-process: its exit status and stderr."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    return exit_info.value.code, capsys.readouterr().err


def compile_lenet(tmp_path: Path, capsys) -> tuple[int, str]:
    """npu-compile of LeNet for mcu-64 in-process, into tmp_path/o."""
    argv = [str(LENET), "-t", "mcu-64", "--calib-random", "2", "-q", "-o", str(tmp_path / "o")]
    return run_main(npu_compile.main, argv, capsys)


def assert_internal_error(status: int, stderr: str, tool: str, *context: str) -> None:
    assert status == 70, stderr
    assert f"{tool}: internal error: " in stderr, stderr
    assert f"{tool}: error:" not in stderr, stderr
    for fragment in context:
        assert fragment in stderr, (fragment, stderr)


def fail(*args, **kwargs):
    raise KeyError("planted bug")


@pytest.fixture(autouse=True)
def no_debug_environment(monkeypatch) -> None:
    monkeypatch.delenv("NPUC_DEBUG", raising=False)


# --------------------------------------------------------------------------- user errors


def test_user_errors_still_exit_1_without_a_traceback(tmp_path: Path):
    for result in (
        run_tool("npu-compile", tmp_path / "missing.onnx", "-t", "mcu-64", "-o", tmp_path / "o"),
        run_tool("npu-opt", tmp_path / "missing.mlir"),
        run_tool("npu-run", tmp_path / "missing.mlir"),
        run_tool("npu-bundle", tmp_path / "missing.mlir", "-t", "mcu-64", "-o", tmp_path / "o"),
    ):
        assert result.returncode == 1, result.stderr
        assert "error:" in result.stderr and "missing." in result.stderr
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr


def test_unwritable_output_is_a_user_error(tmp_path: Path, relu_mlir: Path):
    taken = tmp_path / "a-directory"
    taken.mkdir()
    result = run_tool("npu-opt", relu_mlir, "-o", taken)
    assert result.returncode == 1, result.stderr
    assert f"{taken}: error: cannot write" in result.stderr
    assert "Traceback" not in result.stderr


def test_unreadable_config_is_a_user_error(tmp_path: Path):
    result = run_tool("npu-run", "--config", tmp_path)
    assert result.returncode == 1, result.stderr
    assert "cannot read the config file" in result.stderr
    assert "Traceback" not in result.stderr


def test_no_entry_function_stays_a_user_error(tmp_path: Path):
    model = tmp_path / "two.mlir"
    model.write_text(RELU_MLIR.replace("@main", "@one") + RELU_MLIR.replace("@main", "@other"))
    result = run_tool("npu-run", model)
    assert result.returncode == 1, result.stderr
    assert f"npu-run: {model}: error: the module has no entry function" in result.stderr


# --------------------------------------------------------------------------- internal errors


def test_npu_compile_names_the_stage_pass_op_and_layer(tmp_path: Path, monkeypatch, capsys):
    from npuc.passes.npu_lowering import rules

    monkeypatch.setitem(rules.RULES, "qnn.conv2d", fail)
    status, stderr = compile_lenet(tmp_path, capsys)
    assert_internal_error(
        status,
        stderr,
        "npu-compile",
        "internal error: KeyError: 'planted bug'",
        "stage 'lower', pass 'lower-to-npu",
        "op 'qnn.conv2d' (layer '",
        "rerun with --debug",
    )
    assert "Traceback" not in stderr
    assert not (tmp_path / "o").exists()


def test_a_tile_op_written_wrong_is_still_verified(tmp_path: Path, monkeypatch, capsys):
    """npu-compile verifies the tiled module once, after plan-memory: a bad tile op is caught
    there."""
    from npuc.dialects import qnn
    from npuc.passes.tile import TilePass

    tile = TilePass.apply

    def tile_with_a_bug(self, ctx, module):
        tile(self, ctx, module)
        conv = next(op for op in module.walk() if isinstance(op, qnn.Conv2dOp))
        conv.attributes["bogus"] = conv.properties["groups"]

    monkeypatch.setattr(TilePass, "apply", tile_with_a_bug)
    status, stderr = compile_lenet(tmp_path, capsys)
    assert_internal_error(
        status,
        stderr,
        "npu-compile",
        "does not verify after pass 'plan-memory'",
        "'qnn.conv2d': unknown properties bogus",
        "stage 'plan memory'",
    )
    assert not (tmp_path / "o").exists()


def bogus_canonicalize(monkeypatch) -> None:
    """canonicalize, planted with a bug: it leaves an op with an attribute nn ops refuse."""
    from xdsl.dialects.builtin import UnitAttr

    from npuc.passes.canonicalize import CanonicalizePass

    canonicalize = CanonicalizePass.apply

    def with_a_bug(self, ctx, module):
        canonicalize(self, ctx, module)
        relu = next(op for op in module.walk() if op.name == "nn.relu")
        relu.attributes["bogus"] = UnitAttr()

    monkeypatch.setattr(CanonicalizePass, "apply", with_a_bug)


def test_npu_opt_ir_broken_by_a_pass_is_an_internal_error(relu_mlir: Path, monkeypatch, capsys):
    """The input verified, so IR that fails the verifier after a pass is the pass's bug."""
    bogus_canonicalize(monkeypatch)
    status, stderr = run_main(npu_opt.main, [str(relu_mlir), "-p", "cse,canonicalize"], capsys)
    assert_internal_error(
        status, stderr, "npu-opt", "does not verify after pass 'canonicalize'", "'nn.relu'"
    )


def test_api_pipeline_that_breaks_the_ir_raises_an_internal_error(monkeypatch):
    from npuc.api import apply_pipeline, parse_mlir
    from npuc.diagnostics import InternalError

    bogus_canonicalize(monkeypatch)
    module = parse_mlir(RELU_MLIR, "relu.mlir")
    with pytest.raises(InternalError, match="does not verify after pipeline 'cse,canonicalize'"):
        apply_pipeline(module, "cse,canonicalize")
    module = parse_mlir(RELU_MLIR, "relu.mlir")
    with pytest.raises(InternalError, match="does not verify after pass 'canonicalize'"):
        apply_pipeline(module, "canonicalize")


def test_a_lowered_program_written_wrong_is_an_internal_error(tmp_path: Path, monkeypatch, capsys):
    """The lowering checks its program (here: hazards, as every token is dropped) before it
    becomes npu ops, which npu-compile does not verify again."""
    from dataclasses import replace

    from npuc.passes import lower_to_npu

    with_deps = lower_to_npu.with_deps
    monkeypatch.setattr(
        lower_to_npu, "with_deps", lambda insts: [replace(i, deps=()) for i in with_deps(insts)]
    )
    status, stderr = compile_lenet(tmp_path, capsys)
    assert_internal_error(
        status,
        stderr,
        "npu-compile",
        "lower-to-npu produced an invalid program",
        "without waiting for its token",
        "stage 'lower'",
    )
    assert not (tmp_path / "o").exists()


def test_debug_and_npuc_debug_print_the_traceback(tmp_path: Path, monkeypatch, capsys):
    from npuc.passes.npu_lowering import rules

    monkeypatch.setitem(rules.RULES, "qnn.conv2d", fail)
    argv = [str(LENET), "-t", "mcu-64", "--calib-random", "2", "-q", "-o", str(tmp_path / "o")]
    status, stderr = run_main(npu_compile.main, [*argv, "--debug"], capsys)
    assert_internal_error(status, stderr, "npu-compile", "stage 'lower'", "op 'qnn.conv2d'")
    assert "Traceback (most recent call last)" in stderr and "in fail" in stderr
    assert "rerun with --debug" not in stderr

    status, stderr = run_main(npu_compile.main, argv, capsys)  # --debug was for one run only
    assert status == 70 and "Traceback" not in stderr

    monkeypatch.setenv("NPUC_DEBUG", "1")
    status, stderr = run_main(npu_compile.main, argv, capsys)
    assert_internal_error(status, stderr, "npu-compile", "stage 'lower'")
    assert "Traceback (most recent call last)" in stderr


def test_npu_opt_names_the_pass(relu_mlir: Path, monkeypatch, capsys):
    from npuc.passes.canonicalize import CanonicalizePass

    monkeypatch.setattr(CanonicalizePass, "apply", fail)
    status, stderr = run_main(npu_opt.main, [str(relu_mlir), "-p", "cse,canonicalize"], capsys)
    assert_internal_error(status, stderr, "npu-opt", "pass 'canonicalize'", "rerun with --debug")
    assert "cse" not in stderr and "Traceback" not in stderr


def test_npu_run_names_the_step_and_op(monkeypatch, capsys):
    from npuc.runtime.qnn_interpreter import QuantizedFunctionRunner

    kernels = QuantizedFunctionRunner.evaluate

    def evaluate(op, args):
        return fail() if op.name == "nn.conv2d" else kernels(op, args)

    monkeypatch.setattr(QuantizedFunctionRunner, "evaluate", staticmethod(evaluate))
    status, stderr = run_main(npu_run.main, [str(EXAMPLE)], capsys)
    assert_internal_error(status, stderr, "npu-run", "step 'run', op 'nn.conv2d' (layer '")


def test_npu_run_of_a_binary_names_the_instruction(tmp_path: Path, monkeypatch, capsys):
    from npuc.runtime.executor import Executor

    out = tmp_path / "b"
    argv = [str(LENET), "-t", "mcu-64", "--calib-random", "2", "-q", "-o", str(out)]
    assert run_main(npu_compile.main, argv, capsys)[0] == 0

    built = Executor.__init__

    def with_a_bug(self, program) -> None:
        built(self, program)
        self._schedule[0] = (fail, self._schedule[0][1])

    monkeypatch.setattr(Executor, "__init__", with_a_bug)
    status, stderr = run_main(npu_run.main, [str(out / "lenet5.npubin")], capsys)
    assert_internal_error(status, stderr, "npu-run", "KeyError", "step 'run', instruction ")
    assert "layer '" in stderr


def test_npu_bundle_names_the_step(tmp_path: Path, monkeypatch, capsys):
    from npuc.backend import outputs

    monkeypatch.setattr(outputs, "memory_files", fail)
    argv = [str(EXAMPLE), "-t", "mcu-64", "-o", str(tmp_path / "o")]
    status, stderr = run_main(npu_bundle.main, argv, capsys)
    assert_internal_error(status, stderr, "npu-bundle", "step 'emit'", "rerun with --debug")
    assert not (tmp_path / "o").exists()


def test_keyboard_interrupt_exits_130(relu_mlir: Path, monkeypatch, capsys):
    from npuc.passes.canonicalize import CanonicalizePass

    def interrupt(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(CanonicalizePass, "apply", interrupt)
    status, stderr = run_main(npu_opt.main, [str(relu_mlir), "-p", "canonicalize"], capsys)
    assert status == 130 and stderr.strip() == "npu-opt: interrupted"


@pytest.mark.parametrize("debug", ["", "--debug", "NPUC_DEBUG=1"])
def test_internal_error_in_a_real_process(relu_mlir: Path, debug: str):
    """The exit status and stderr a shell sees, from a subprocess running npu-opt's main."""
    args = [str(relu_mlir), "-p", "canonicalize"] + ([debug] if debug == "--debug" else [])
    script = (
        "from npuc.passes.canonicalize import CanonicalizePass\n"
        "def fail(*a): raise RuntimeError('planted bug')\n"
        "CanonicalizePass.apply = fail\n"
        "from npuc.tools.npu_opt import main\n"
        f"main({args!r})\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NPUC_DEBUG"}
    if debug.startswith("NPUC_DEBUG"):
        env["NPUC_DEBUG"] = "1"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 70, result.stderr
    assert "npu-opt: internal error: RuntimeError: planted bug" in result.stderr
    assert "while working on: pass 'canonicalize'" in result.stderr
    assert ("Traceback (most recent call last)" in result.stderr) == bool(debug)
    assert ("rerun with --debug" in result.stderr) != bool(debug)


def fail_with_value_error(*args, **kwargs):
    raise ValueError("planted bug")


def test_a_value_error_in_a_kernel_is_internal_not_the_users(tmp_path: Path, monkeypatch, capsys):
    """Kernels raise KernelError for what the data causes; any other ValueError is a bug."""
    from npuc.runtime import npu_kernels
    from npuc.runtime.qnn_interpreter import QuantizedFunctionRunner

    out = tmp_path / "b"
    argv = [str(LENET), "-t", "mcu-64", "--calib-random", "2", "-q", "-o", str(out)]
    assert run_main(npu_compile.main, argv, capsys)[0] == 0

    kernels = QuantizedFunctionRunner.evaluate

    def evaluate(op, args):
        return fail_with_value_error() if op.name == "nn.conv2d" else kernels(op, args)

    monkeypatch.setattr(QuantizedFunctionRunner, "evaluate", staticmethod(evaluate))
    status, stderr = run_main(npu_run.main, [str(EXAMPLE)], capsys)
    assert_internal_error(status, stderr, "npu-run", "ValueError: planted bug", "op 'nn.conv2d'")

    monkeypatch.setattr(npu_kernels, "pool", fail_with_value_error)
    status, stderr = run_main(npu_run.main, [str(out / "lenet5.npubin")], capsys)
    assert_internal_error(status, stderr, "npu-run", "ValueError: planted bug", "(pool")
