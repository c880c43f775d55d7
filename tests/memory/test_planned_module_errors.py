"""A memory-planned module whose buffers are edited by hand: each fault is reported at the op
that holds the buffer, with its line, by the tools and by `read_plan`; nothing is written."""

# ruff: noqa: E501  (IR in strings keeps its one-op-per-line form)

from __future__ import annotations

import re

import pytest
from tool_runner import run_tool
from xdsl.dialects.builtin import ArrayAttr

import npuc.api as api
from npuc.diagnostics import NpucError
from npuc.graph_io import entry_function
from npuc.passes.memory.ir import read_plan

SOURCE = """
func.func @main(%x: tensor<1x2x4x4xf32> {nn.name = "x"}) -> (tensor<1x2x4x4xf32> {nn.name = "y"}) {
  %a = nn.exp %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p, %q = nn.split %a {axis = 1 : i64} : (tensor<1x2x4x4xf32>) -> (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>)
  %c = nn.concat %q, %p {axis = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %r = nn.relu %c : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %r : tensor<1x2x4x4xf32>
}
"""


@pytest.fixture(scope="module")
def planned_text() -> str:
    module = api.apply_pipeline(api.parse_mlir(SOURCE), "plan-memory{target=mcu-64 alignment=16}")
    return str(module)


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def _edit(text: str, op: str, pattern: str, replacement: str) -> str:
    """`text` with `pattern` replaced (once) on the line that defines `op`."""
    lines = text.splitlines()
    i = _line_of(text, op) - 1
    edited, n = re.subn(pattern, replacement, lines[i], count=1)
    assert n == 1, lines[i]
    lines[i] = edited
    return "\n".join(lines) + "\n"


def test_a_missing_buffer_is_reported_at_its_op_by_npu_bundle(tmp_path, planned_text):
    text = _edit(planned_text, "nn.concat", r"mem\.buffer = #mem\.buffer<[^>]*>, ", "")
    src = tmp_path / "edited.mlir"
    src.write_text(text)
    out = tmp_path / "bundle"
    proc = run_tool("npu-bundle", src, "--target", "mcu-64", "-o", out)
    line = _line_of(text, "nn.concat")
    assert proc.returncode == 1, proc.stderr
    assert re.search(
        rf"edited\.mlir:{line}:\d+: error: 'nn\.concat' \(unnamed\) has no mem\.buffer", proc.stderr
    ), proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert not out.exists()


def test_read_plan_refuses_fewer_buffers_than_results(planned_text):
    module = api.parse_mlir(planned_text)
    split = next(op for op in entry_function(module).body.block.ops if op.name == "nn.split")
    buffers = split.attributes["mem.buffer"]
    assert isinstance(buffers, ArrayAttr) and len(buffers.data) == 2
    split.attributes["mem.buffer"] = ArrayAttr(buffers.data[:1])  # past the verifier
    with pytest.raises(NpucError, match=r"'nn\.split' \(unnamed\) has no mem\.buffer"):
        read_plan(module)


@pytest.mark.parametrize(
    "op, pattern, replacement, message",
    [
        (
            "nn.split",
            r"\[#mem\.buffer<[^>]*>, ",
            "[",
            r"'nn\.split': mem\.buffer must be a #mem\.buffer per result \(2\)",
        ),
        (
            "nn.concat",
            r'"activations", 128,',
            '"activations", 144,',
            r"result 0 of 'nn\.concat': bytes \[144, 272\) exceed region @activations of 256 bytes",
        ),
        (
            "nn.concat",
            r'"activations", 128, 128',
            '"activations", 8, 128',
            r"result 0 of 'nn\.concat': offset 8 in @activations is not 16-aligned",
        ),
        (
            "nn.exp",
            r'"activations",',
            '"scratch",',
            r"result 0 of 'nn\.exp': no mem\.region @scratch",
        ),
    ],
    ids=["split-one-of-two", "past-the-region", "misaligned", "no-region"],
)
def test_a_bad_buffer_is_reported_at_its_op_not_at_the_region(
    tmp_path, planned_text, op, pattern, replacement, message
):
    text = _edit(planned_text, op, pattern, replacement)
    src = tmp_path / "edited.mlir"
    src.write_text(text)
    out = tmp_path / "out.mlir"
    proc = run_tool("npu-opt", src, "-o", out)
    line = _line_of(text, op)
    assert proc.returncode == 1, proc.stderr
    assert re.search(rf"edited\.mlir:{line}:\d+: error: {message}", proc.stderr), proc.stderr
    assert "in: " not in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()
