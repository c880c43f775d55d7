"""docs/cycle-model.md's depthwise rule, `ceil(Co / oc) x ceil(P / px) x KH x KW`, holds
whatever the array's input-channel lanes: with a single lane (a legal target) too, where a
count that took 2 input channels per block would double."""

from __future__ import annotations

import dataclasses

import pytest
from npu_programs import inst, tensor

from npuc.runtime.cycle_model import compute_cycles
from npuc.target import MacArray, load_target


@pytest.mark.parametrize("ic", [1, 2, 8])
def test_depthwise_cycles_ignore_the_input_channel_lanes(ic):
    target = dataclasses.replace(load_target("mcu-64"), mac_array=MacArray(8, 4, ic))
    co, hw, k = 12, 5, 3
    conv = inst(
        "conv2d",
        (
            tensor("sram", 0, (1, co, hw, hw)),
            tensor("constants", 0, (co, 1, k, k)),
            tensor("constants", 4096, (co, 4), "i32"),
            tensor("sram", 4096, (1, co, hw, hw)),
        ),
        pads=(1, 1, 1, 1),
        groups=co,
    )
    assert compute_cycles(conv, target) == -(-co // 8) * -(-hw * hw // 4) * k * k == 7 * 2 * 9
