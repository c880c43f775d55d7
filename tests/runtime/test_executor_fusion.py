"""The executor's fast schedule (runtime/fusion.py): conv2d tiles run as one convolution
and DMAs nobody reads skipped, with the same outputs as the whole `qnn.conv2d`.

Each program is a convolution split into tiles the way a tiled program splits a layer,
with a weight DMA into SRAM before every tile. The reference is `qnn.conv2d` of the whole
tensors; the runs and dead DMAs found are checked too, and programs where joining the
tiles would change the result are checked to keep them apart.
"""

from __future__ import annotations

import numpy as np
import pytest
from npu_programs import Builder, inst, qnn_conv, random_table, row_major, spread, tensor

from npuc.runtime import fusion
from npuc.runtime.executor import Executor

PARAMS = dict(
    dilations=(1, 1),
    ifm_zero_point=-7,
    ofm_zero_point=-128,
    clamp_min=-128,
    clamp_max=127,
    rounding="tflite",
)


def _slice(t, axis: int, start: int, count: int):
    """The part of the NCHW view t from `start` on `axis`, `count` long."""
    shape = list(t.shape)
    shape[axis] = count
    return tensor(t.region, t.offset + start * t.strides[axis], shape, t.dtype, t.strides)


def tiled_conv(kind: str, tiles: int, rng: np.random.Generator):
    """(builder, body, the whole convolution of an input, tile indices) for `kind`:
    depthwise: channel tiles of a 3x3 depthwise convolution;
    out_channels: tiles of the output channels of a 3x3 convolution of one input;
    rows: row tiles of a pointwise convolution, the same weights each."""
    c, h, w = 8 * tiles, 12, 10
    co = {"depthwise": c, "out_channels": 4 * tiles, "rows": 6}[kind]
    cin = {"depthwise": 1, "out_channels": 5, "rows": 5}[kind]
    k = 1 if kind == "rows" else 3
    x = rng.integers(-128, 128, (1, c if kind == "depthwise" else cin, h, w))
    weights = rng.integers(-128, 128, (co, cin, k, k))
    table = random_table(rng, co, (38, 41))
    p = dict(
        PARAMS,
        strides=(1, 1),
        pads=(0,) * 4 if k == 1 else (1, 1, 1, 1),
        groups=c if kind == "depthwise" else 1,
    )
    b = Builder()
    xt = b.input("x", x, "i8")
    yt = b.output("y", (1, co, h, w))
    body, members = [], []
    axis = 2 if kind == "rows" else 1
    step = (h if kind == "rows" else co) // tiles
    for t in range(tiles):
        part = slice(t * step, (t + 1) * step)
        rows = table if kind == "rows" else table[part]
        wpart = weights if kind == "rows" else weights[part]
        sram = tensor("sram", 0, wpart.shape)
        body.append(inst("dma", (b.const(wpart, "i8"), sram)))
        ifm = xt if kind == "out_channels" else _slice(xt, axis, part.start, step)
        members.append(len(body))
        out = _slice(yt, axis, part.start, step)
        tile = dict(p, groups=step if kind == "depthwise" else 1)
        body.append(inst("conv2d", (ifm, sram, b.const(rows, "i32"), out), **tile))

    def whole(x: np.ndarray) -> np.ndarray:
        return qnn_conv(x, "i8", weights, np.zeros(co, np.int64), table, p, (1, co, h, w))

    return b, body, whole, members


@pytest.mark.parametrize("kind", ["depthwise", "out_channels", "rows"])
def test_tiles_run_as_one_convolution(kind: str) -> None:
    rng = np.random.default_rng(len(kind))
    b, body, whole, members = tiled_conv(kind, 3, rng)
    want = whole(b.feeds["x"])
    executor = Executor(b.program(body))
    runs = fusion.tile_runs(executor.program, executor._frozen, executor._same_constants)
    assert [run.members for run in runs] == [tuple(members)]
    assert fusion.dead_dmas(executor.program, executor._frozen) == {0, 2, 4}
    assert len(executor._schedule) == 1
    fast = executor.run(b.feeds)["y"]
    one_by_one = executor.run(b.feeds, observe=lambda *_: None)["y"]
    np.testing.assert_array_equal(fast, want)
    np.testing.assert_array_equal(one_by_one, want)
    spread(want, -128, 127)


def test_a_read_of_a_tile_output_between_tiles_keeps_them_apart() -> None:
    """A copy of the first tile's output made before the second tile runs sees it written."""
    b, body, whole, members = tiled_conv("depthwise", 2, np.random.default_rng(1))
    want = whole(b.feeds["x"])
    first_out = body[members[0]].operands[3]
    copy = b.output("copy", first_out.shape)
    body.insert(members[1], inst("dma", (first_out, copy)))
    executor = Executor(b.program(body))
    assert fusion.tile_runs(executor.program, executor._frozen, executor._same_constants) == []
    out = executor.run(b.feeds)
    np.testing.assert_array_equal(out["y"], want)
    np.testing.assert_array_equal(out["copy"], want[:, :8])


def test_a_write_into_a_later_tile_input_keeps_them_apart() -> None:
    """A DMA between the tiles that overwrites the second tile's input is seen by it only."""
    rng = np.random.default_rng(2)
    b, body, whole, members = tiled_conv("depthwise", 2, rng)
    second = body[members[1]].operands[0]
    patch = rng.integers(-128, 128, second.shape)
    body.insert(members[1], inst("dma", (b.const(patch, "i8"), second)))
    executor = Executor(b.program(body))
    assert fusion.tile_runs(executor.program, executor._frozen, executor._same_constants) == []
    patched = b.feeds["x"].copy()
    patched[:, 8:] = patch
    got = executor.run(b.feeds)["y"]
    np.testing.assert_array_equal(got[:, :8], whole(b.feeds["x"])[:, :8])
    np.testing.assert_array_equal(got[:, 8:], whole(patched)[:, 8:])


def test_dmas_whose_bytes_are_read_still_run() -> None:
    """Weights DMA'd to SRAM and used by a planned conv2d are not read by it, but a move
    reading them afterwards is; a DMA into an output is read by the caller."""
    rng = np.random.default_rng(4)
    b, body, whole, _ = tiled_conv("depthwise", 2, rng)
    weights = body[0].operands[1]  # holds the second tile's weights after its DMA
    kept = b.output("weights", (1, *weights.shape[:1], 3, 3))
    flat = tensor(weights.region, weights.offset, kept.shape, "i8", row_major(kept.shape))
    patch = rng.integers(-128, 128, (1, 2, 3, 3))
    body += [inst("move", (flat, kept)), inst("dma", (b.const(patch, "i8"), _slice(kept, 1, 0, 2)))]
    executor = Executor(b.program(body))
    assert fusion.dead_dmas(executor.program, executor._frozen) == {0}
    out = executor.run(b.feeds)
    np.testing.assert_array_equal(out["y"], whole(b.feeds["x"]))
    source = body[2].operands[0]  # the second tile's weights in the constants
    second = np.frombuffer(bytes(b.constants), np.int8, 72, source.offset).reshape(8, 3, 3)
    np.testing.assert_array_equal(out["weights"][0, 2:], second[2:])
    np.testing.assert_array_equal(out["weights"][:, :2], patch)


@pytest.mark.parametrize("second_half_replaced", [True, False])
def test_dma_bytes_replaced_piece_by_piece(second_half_replaced: bool) -> None:
    """A DMA whose bytes two later writes replace, each a half, before a read of them all
    is dead; with only the first half replaced, the read sees the other half, and the DMA
    runs."""
    b = Builder()
    first, second, third = (np.full(64, v, np.int8) for v in (1, 2, 3))
    buffer = tensor("sram", 0, (64,))
    out = b.output("y", (64,))
    body = [
        inst("dma", (b.const(first, "i8"), buffer)),
        inst("dma", (b.const(second[:32], "i8"), tensor("sram", 0, (32,)))),
    ]
    if second_half_replaced:
        body.append(inst("dma", (b.const(third[:32], "i8"), tensor("sram", 32, (32,)))))
    body.append(inst("dma", (buffer, out)))
    executor = Executor(b.program(body))
    dead = fusion.dead_dmas(executor.program, executor._frozen)
    assert (0 in dead) == second_half_replaced
    want = np.concatenate([second[:32], (third if second_half_replaced else first)[32:]])
    np.testing.assert_array_equal(executor.run(b.feeds)["y"], want)
    observed = executor.run(b.feeds, observe=lambda *_: None)["y"]  # every DMA runs
    np.testing.assert_array_equal(observed, want)
