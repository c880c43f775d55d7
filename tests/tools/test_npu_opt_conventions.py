"""npu-opt as mlir-opt and xdsl-opt users expect it: stdout is the output IR and nothing else,
`-` reads standard input, --split-input-file prints every chunk, --help describes every pass,
large constants are elided only on request, locations print with --print-debuginfo; and the
flags every tool shares (--version, --list-targets)."""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import onnx
import pytest
from tool_runner import EXAMPLE, RELU_MLIR, run_tool, tool_command

from npuc.registry import DEFAULT_PIPELINE, PASSES
from npuc.target import available_targets, load_target

BAD_CHUNK = """\
func.func @main(%x: tensor<1x4xf32> {nn.name = "x"}) -> (tensor<1x5xf32> {nn.name = "y"}) {
  %0 = nn.relu %x : (tensor<1x4xf32>) -> tensor<1x5xf32>
  func.return %0 : tensor<1x5xf32>
}
"""


def test_time_passes_goes_to_stderr_and_stdout_stays_parseable(tmp_path: Path):
    done = run_tool("npu-opt", EXAMPLE, "-p", DEFAULT_PIPELINE, "--time-passes")
    assert done.returncode == 0, done.stderr
    timed = re.findall(r"^Pass (\S+) took [\d.]+ seconds$", done.stderr, re.M)
    assert timed == DEFAULT_PIPELINE.split(",")
    assert "took" not in done.stdout
    (tmp_path / "out.mlir").write_text(done.stdout)
    again = run_tool("npu-opt", tmp_path / "out.mlir")
    assert again.returncode == 0, again.stderr
    assert again.stdout == done.stdout


def test_print_between_passes_goes_to_stderr():
    done = run_tool("npu-opt", EXAMPLE, "-p", "canonicalize,cse", "--print-between-passes")
    assert done.returncode == 0, done.stderr
    assert "// IR after canonicalize:" in done.stderr and "nn.conv2d" in done.stderr
    assert "IR after" not in done.stdout


def test_dash_reads_standard_input(relu_mlir: Path):
    done = subprocess.run(
        [*tool_command("npu-opt"), "-"],
        input=RELU_MLIR,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == run_tool("npu-opt", relu_mlir).stdout


def test_split_input_file_prints_every_good_chunk_and_reports_the_bad(tmp_path: Path):
    source = tmp_path / "chunks.mlir"
    source.write_text("\n// -----\n".join([RELU_MLIR, BAD_CHUNK, RELU_MLIR]))
    done = run_tool("npu-opt", source, "--split-input-file")
    assert done.returncode == 1
    chunks = done.stdout.split("// -----\n")
    assert len(chunks) == 3
    assert "nn.relu" in chunks[0] and "nn.relu" in chunks[2] and chunks[1] == ""
    (error,) = [line for line in done.stderr.splitlines() if "error:" in line]
    assert "result shape must be 1x4, got 1x5" in error and str(source) in error
    assert "Traceback" not in done.stderr
    good = run_tool("npu-opt", source, "--split-input-file", "-o", tmp_path / "out.mlir")
    assert good.returncode == 1
    assert (tmp_path / "out.mlir").read_text() == done.stdout  # the good chunks still written


def test_help_lists_every_pass_with_its_description_and_options():
    done = run_tool("npu-opt", "--help")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    for name, load in PASSES.items():
        cls = load()
        summary = cls.__doc__.strip().splitlines()[0]
        assert re.search(rf"^  {re.escape(name)} +{re.escape(summary)}$", text, re.M), name
        for field in dataclasses.fields(cls):
            assert re.search(rf"^      {field.name}: ", text, re.M), (name, field.name)
    assert '      target: str = ""' in text  # tile's and plan-memory's option, with its default
    for target in available_targets():
        assert target in text


def test_list_targets_gives_each_target_its_figures():
    for tool in ("npu-opt", "npu-compile"):
        done = run_tool(tool, "--list-targets")
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert [line.split()[0] for line in lines] == available_targets()
        for line in lines:
            target = load_target(line.split()[0])
            assert f"{target.macs_per_cycle} MACs/cycle" in line
            assert f"{target.clock_mhz:g} MHz" in line
            assert target.sram.name in line


@pytest.mark.parametrize("tool", ["npu-opt", "npu-run", "npu-compile", "npu-bundle"])
def test_every_tool_tells_its_version(tool):
    from npuc.version import __version__

    done = run_tool(tool, "--version")
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(rf"{tool} {re.escape(__version__)} \(xDSL [\d.]+\)\n", done.stdout)


def test_constants_print_in_full_unless_eliding_is_asked():
    full = run_tool("npu-opt", EXAMPLE)
    elided = run_tool("npu-opt", EXAMPLE, "--mlir-elide-elementsattrs-if-larger=16")
    assert full.returncode == elided.returncode == 0
    assert "__elided__" not in full.stdout
    # conv1's 8x3x3x3 weights (216 elements) elided, its 8 biases not
    assert "dense_resource<__elided__> : tensor<8x3x3x3xf32>" in elided.stdout
    assert "dense_resource<__elided__> : tensor<8xf32>" not in elided.stdout
    run = run_tool("npu-run", EXAMPLE, "--print-ir", "-q")
    assert run.returncode == 0 and "__elided__" not in run.stdout
    run = run_tool("npu-run", EXAMPLE, "--print-ir", "--mlir-elide-elementsattrs-if-larger", "8")
    assert "dense_resource<__elided__> : tensor<8x3x3x3xf32>" in run.stdout
    bad = run_tool("npu-opt", EXAMPLE, "--mlir-elide-elementsattrs-if-larger=-1")
    assert bad.returncode == 2 and "expected a number of elements" in bad.stderr


def test_imported_ops_are_located_at_their_onnx_node():
    names = {node.name for node in onnx.load(EXAMPLE).graph.node}
    plain = run_tool("npu-opt", EXAMPLE)
    located = run_tool("npu-opt", EXAMPLE, "--print-debuginfo")
    assert plain.returncode == located.returncode == 0
    assert "loc(" not in plain.stdout
    ops = [line for line in located.stdout.splitlines() if re.search(r"= nn\.(conv2d|relu)", line)]
    assert ops
    for line in ops:
        (where,) = re.findall(r'loc\("([^"]+)"\)$', line)
        assert where in names
        assert f'name = "{where}"' in line
    run = run_tool("npu-run", EXAMPLE, "--print-ir", "--print-debuginfo", "-p", "default")
    assert 'loc("conv1")' in run.stdout  # kept through the passes


def test_a_verifier_error_names_the_layer_of_the_failing_op(tmp_path: Path):
    source = tmp_path / "bad.mlir"
    source.write_text(
        BAD_CHUNK.replace("-> tensor<1x5xf32>\n", '-> tensor<1x5xf32> loc("conv9")\n', 1)
    )
    done = run_tool("npu-opt", source, "--print-debuginfo")
    assert done.returncode == 1
    first = done.stderr.splitlines()[0]
    assert first.startswith(f'npu-opt: {source}: layer "conv9": error: ')
    assert "result shape must be 1x4, got 1x5" in first
