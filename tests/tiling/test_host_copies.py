"""A run of layers is tiled only if no tile would slice a float tensor made outside it or
assemble a float result: float tiles have no NPU instruction, so each such slice or insert
would be a host copy of the whole tensor (`Planner.host_copies`)."""

from __future__ import annotations

import npuc
from npuc.graph_io import entry_function
from npuc.passes.tiling.layers import find_layers
from npuc.passes.tiling.search import Planner
from npuc.target import load_target

I8 = "!qnn.uniform<i8:f32, 0.0625:3>"
P8 = "!qnn.uniform<i8:f32, 0.00390625:-128>"
# int8 -> float (host) softmax over rows -> int8, 128 KiB float maps
FLOAT_SOFTMAX = f"""
func.func @main(%x: tensor<1x64x512x{I8}>) -> tensor<1x64x512x{P8}> {{
  %f = qnn.dequantize %x : (tensor<1x64x512x{I8}>) -> tensor<1x64x512xf32>
  %s = nn.softmax %f {{axis = 2 : i64, name = "softmax"}}
    : (tensor<1x64x512xf32>) -> tensor<1x64x512xf32>
  %q = qnn.quantize %s : (tensor<1x64x512xf32>) -> tensor<1x64x512x{P8}>
  func.return %q : tensor<1x64x512x{P8}>
}}
"""


def test_only_runs_with_int8_bounds_get_tiles() -> None:
    func = entry_function(npuc.parse_mlir(FLOAT_SOFTMAX))
    planner = Planner(func, find_layers(func), load_target("mcu-64"), 64 * 1024, 0.5)
    assert planner.float_islands
    tiled = {
        (first, last): max(e.tiles for e in planner.options(first, last))
        for last in range(3)
        for first in range(last + 1)
    }
    # dequantize .. quantize starts and ends at int8 tensors; every other run reads the
    # float map from outside (1..2, 2..2) or leaves one as its result (0..0, 0..1, 1..1)
    assert tiled.pop((0, 2)) > 1
    assert tiled == dict.fromkeys(tiled, 1)
