"""The `manual` option: its grammar, located syntax errors, semantic checks, npu-opt's exit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tool_runner import run_tool
from xdsl.dialects.builtin import FunctionType, IntegerAttr, ModuleOp, TensorType, f32, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region

from npuc.api import make_context
from npuc.diagnostics import NpucError
from npuc.dialects import nn
from npuc.graph_io import entry_function
from npuc.passes.tile import TilePass
from npuc.passes.tiling.layers import find_layers
from npuc.passes.tiling.manual import check_entries, parse_manual
from npuc.passes.tiling.search import Planner
from npuc.pipeline import parse_mlir
from npuc.printing import print_module
from npuc.target import load_target
from npuc.tensors import to_dense


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("", []),
        ("  ", []),
        ("(3,7,4,1)", [(3, 7, 4, 1)]),
        ("(3,7,4,1);(12,12,1,2)", [(3, 7, 4, 1), (12, 12, 1, 2)]),
        (" ( 3 , 7 , 4 ) ; (12,12,1,2) ; ", [(3, 7, 4, 1), (12, 12, 1, 2)]),
        ("(0,0,1)", [(0, 0, 1, 1)]),
        ("(10,20,300,4)\n;(21,21,2,2)", [(10, 20, 300, 4), (21, 21, 2, 2)]),
    ],
)
def test_good_strings_parse(text: str, want: list[tuple[int, int, int, int]]):
    assert [e.as_tuple() for e in parse_manual(text)] == want


def test_entries_keep_their_source_text():
    first, second = parse_manual("(3, 7,4,1) ;(12,12,1,2)")
    assert (first.text, second.text) == ("(3, 7,4,1)", "(12,12,1,2)")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("(3,7,4x", "line 1, column 7: expected ',' or ')', got 'x'\n  (3,7,4x\n        ^"),
        ("(3,7,4,1x", "line 1, column 9: expected ')', got 'x'\n  (3,7,4,1x\n          ^"),
        ("(3,7", "line 1, column 5: expected ',', got end of input\n  (3,7\n      ^"),
        ("(3,-7,1,1)", "line 1, column 4: expected a number, got '-'\n  (3,-7,1,1)\n     ^"),
        ("3,7,4,1", "line 1, column 1: expected '(', got '3'\n  3,7,4,1\n  ^"),
        ("(3,7,4,1)(1,1,1,1)", "line 1, column 10: expected ';' or end of input, got '('"),
        ("(3,7,4,1);;", "line 1, column 11: expected '(' or end of input, got ';'"),
        (
            "(1,1,1,1);\n(2,2,,1)",
            "line 2, column 6: expected a number, got ','\n  (2,2,,1)\n       ^",
        ),
        ("(3,7,4,1,1)", "line 1, column 9: expected ')', got ','"),
        (
            "(1,1,1,1);\n(3,7",
            "line 2, column 5: expected ',', got end of input\n  (3,7\n      ^",
        ),
    ],
)
def test_bad_strings_point_at_the_bad_token(text: str, message: str):
    with pytest.raises(NpucError) as info:
        parse_manual(text)
    assert str(info.value).startswith(f"error: manual: {message}")


def _chain_module(layer_count: int = 3, branch: bool = False) -> ModuleOp:
    """conv -> relu -> relu ... on 1x2x8x6; with `branch`, the conv also feeds the last op."""
    block = Block(arg_types=[TensorType(f32, [1, 2, 8, 6])])
    w = nn.ConstantOp(to_dense(np.full((2, 2, 3, 3), 0.5, np.float32)))
    props = {
        "strides": nn.ints([1, 1]),
        "pads": nn.ints([1, 1, 1, 1]),
        "dilations": nn.ints([1, 1]),
        "groups": IntegerAttr(1, i64),
    }
    conv = nn.build(nn.Conv2dOp, [block.args[0], w], props, name="conv")
    ops = [w, conv]
    x = conv.results[0]
    for i in range(layer_count - 1):
        if branch and i == layer_count - 2:
            op = nn.build(nn.AddOp, [x, conv.results[0]], name=f"add{i}")
        else:
            op = nn.build(nn.ReluOp, [x], name=f"relu{i}")
        ops.append(op)
        x = op.results[0]
    for op in ops:
        block.add_op(op)
    block.add_op(ReturnOp(x))
    signature = FunctionType.from_lists([block.args[0].type], [x.type])
    return ModuleOp([FuncOp("main", signature, Region(block))])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "(0,3,1,1)",
            "entry 1 '(0,3,1,1)': layer 3 is out of range (the layers are numbered 0 to 2)",
        ),
        ("(2,1,1,1)", "entry 1 '(2,1,1,1)': the last layer 1 comes before the first layer 2"),
        ("(0,1,0,1)", "entry 1 '(0,1,0,1)': h_parts must be at least 1, got 0"),
        ("(0,1,1,0)", "entry 1 '(0,1,1,0)': w_parts must be at least 1, got 0"),
        (
            "(0,1,1,1);(1,2,1,1)",
            "entry 2 '(1,2,1,1)': its layers overlap those of entry 1 '(0,1,1,1)'",
        ),
        (
            "(0,0,9,1)",
            "entry 1 '(0,0,9,1)': h_parts 9 exceed the 8 rows of layer 0 'conv' (nn.conv2d)",
        ),
        (
            "(1,1,1,7)",
            "entry 1 '(1,1,1,7)': w_parts 7 exceed the 6 columns of layer 1 'relu0' (nn.relu)",
        ),
    ],
)
def test_bad_entries_are_refused(text: str, message: str):
    layers = find_layers(entry_function(_chain_module()))
    with pytest.raises(NpucError) as info:
        check_entries(parse_manual(text), layers)
    assert str(info.value) == f"error: manual: {message}"


def test_a_range_must_keep_its_results_inside():
    module = _chain_module(3, branch=True)  # conv -> relu0 -> add1(relu0, conv)
    with pytest.raises(NpucError) as info:
        TilePass(target="mcu-64", manual="(0,1,2,1)").apply(make_context(), module)
    assert str(info.value) == (
        "error: manual: entry 1 '(0,1,2,1)': layers 0..1 cannot run as one cascade: "
        "the result of layer 0 'conv' (nn.conv2d) is also used by 'add1', outside the range"
    )
    # A sub-graph whose every inner result is read inside the range is a cascade too.
    TilePass(target="mcu-64", manual="(0,2,2,1)").apply(make_context(), module)
    # So is the chain that does exist.
    TilePass(target="mcu-64", manual="(1,2,2,1)").apply(
        make_context(), _chain_module(3, branch=True)
    )


def test_syntax_errors_are_found_before_the_pass_runs():
    with pytest.raises(NpucError, match="column 2: expected a number"):
        TilePass(target="mcu-64", manual="(x")


@pytest.mark.parametrize(
    ("manual", "message"),
    [
        ("(0,1,2x", "manual: line 1, column 7: expected ',' or ')', got 'x'"),
        ("(0,5,1,1)", "manual: entry 1 '(0,5,1,1)': layer 5 is out of range"),
    ],
)
def test_npu_opt_reports_a_bad_manual_option(tmp_path: Path, manual: str, message: str):
    source = tmp_path / "chain.mlir"
    out = tmp_path / "out.mlir"
    source.write_text(print_module(_chain_module(), elide_above=None))
    result = run_tool(
        "npu-opt", source, "-p", f'tile{{target="mcu-64" manual="{manual}"}}', "-o", out
    )
    assert result.returncode == 1
    assert result.stderr.startswith(f"npu-opt: error: {message}")
    assert "Traceback" not in result.stderr
    assert not out.exists()


def transposed_relu_fc() -> tuple[ModuleOp, dict[str, Operation]]:
    """transpose (NHWC -> NCHW) -> relu -> reshape -> fully connected, and its ops by name."""
    block = Block(arg_types=[TensorType(f32, [1, 6, 8, 2])])
    t = nn.build(nn.TransposeOp, [block.args[0]], {"perm": nn.ints([0, 3, 1, 2])})
    relu = nn.build(nn.ReluOp, [t], name="relu")
    flat = nn.build(nn.ReshapeOp, [relu], result_types=[TensorType(f32, [1, 96])])
    w = nn.ConstantOp(to_dense(np.ones((3, 96), np.float32)))
    fc = nn.build(nn.FullyConnectedOp, [flat, w], name="fc")
    block.add_ops([t, relu, flat, w, fc, ReturnOp(fc.results[0])])
    signature = FunctionType.from_lists([block.args[0].type], [fc.results[0].type])
    module = ModuleOp([FuncOp("main", signature, Region(block))])
    return module, {"transpose": t, "relu": relu, "fc": fc}


def test_layer_numbering_skips_constants_reshapes_and_transposes():
    module, ops = transposed_relu_fc()
    t = ops["transpose"]
    layers = find_layers(entry_function(module))
    assert [(layer.index, layer.name) for layer in layers] == [(0, "relu"), (1, "fc")]
    assert layers[0].transposes == {0: t}  # folded into the relu's tiles


def test_pass_options_print_and_parse_back():
    from xdsl.passes import PassPipeline

    from npuc.registry import PASSES

    tile = TilePass(target="mcu-64", manual="(0,1,2);(2,2,1,2)", overlap_limit=0.25, report=True)
    spec = str(tile.pipeline_pass_spec())
    assert spec == (
        'tile{target="mcu-64" manual="(0,1,2);(2,2,1,2)" overlap_limit=0.25 report=true}'
    )
    assert PassPipeline.parse_spec(PASSES, spec).passes == (tile,)


SOFTMAX_OVER_W = """
func.func @main(%x: tensor<1x4x8x6xf32>) -> tensor<1x4x8x6xf32> {
  %y = nn.softmax %x {axis = 3 : i64, name = "softmax"}
    : (tensor<1x4x8x6xf32>) -> tensor<1x4x8x6xf32>
  func.return %y : tensor<1x4x8x6xf32>
}
"""


def test_a_softmax_is_split_along_any_axis_but_its_own():
    layers = find_layers(entry_function(parse_mlir(SOFTMAX_OVER_W)))
    assert layers[0].fixed == (False, True)
    check_entries(parse_manual("(0,0,2,1)"), layers)  # stripes along H, W whole
    with pytest.raises(NpucError) as info:
        check_entries(parse_manual("(0,0,1,2)"), layers)
    assert str(info.value) == (
        "error: manual: entry 1 '(0,0,1,2)': layer 0 'softmax' (nn.softmax) cannot be split "
        "along W (its softmax axis)"
    )


def test_a_folded_transpose_and_the_constants_hold_no_bytes_of_their_own():
    # the relu's tiles transpose their own slices: its input whole is the argument's bytes,
    # never the transposed copy; the weights live in flash (mcu-64)
    module, ops = transposed_relu_fc()
    func = entry_function(module)
    planner = Planner(func, find_layers(func), load_target("mcu-64"), 256 * 1024, 0.5)
    assert planner.layers[0].transposes == {0: ops["transpose"]}
    held = {value for value, *_ in planner.residency.tensors}
    assert held == {func.body.block.args[0], ops["relu"].results[0], ops["fc"].results[0]}
    assert planner.resident(0, 0) == 2 * 96 * 4  # the argument and the relu's result


RELU_SOFTMAX_SKIP = """
func.func @main(%x: tensor<1x4x8x6xf32>) -> tensor<1x4x8x6xf32> {
  %a = nn.relu %x {name = "relu0"} : (tensor<1x4x8x6xf32>) -> tensor<1x4x8x6xf32>
  %b = nn.relu %a {name = "relu1"} : (tensor<1x4x8x6xf32>) -> tensor<1x4x8x6xf32>
  %c = nn.softmax %b {axis = 0 : i64, name = "softmax"}
    : (tensor<1x4x8x6xf32>) -> tensor<1x4x8x6xf32>
  %d = nn.add %a, %c {name = "add"}
    : (tensor<1x4x8x6xf32>, tensor<1x4x8x6xf32>) -> tensor<1x4x8x6xf32>
  func.return %d : tensor<1x4x8x6xf32>
}
"""


def test_a_layer_that_cannot_be_split_is_named_before_the_ranges_links():
    """Whatever else is wrong with a range (here relu0's result read outside it), a layer
    that can never join a cascade is the reason given: no other range fixes that."""
    layers = find_layers(entry_function(parse_mlir(RELU_SOFTMAX_SKIP)))
    with pytest.raises(NpucError) as info:
        check_entries(parse_manual("(0,2,2,1)"), layers)
    assert str(info.value) == (
        "error: manual: entry 1 '(0,2,2,1)': layers 0..2 cannot run as one cascade: "
        "layer 2 'softmax' (nn.softmax) cannot be split along H and W"
    )
