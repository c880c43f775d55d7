"""Sample NPU programs for the dialect, binary and loader tests.

`TINY` (tiny.mlir) is a small network in textual IR (every instruction kind,
double-buffered weights, a host op); the others are built as plain `Program` data with random
weights and real requantization tables.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from npu_programs import inst, tensor
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from npuc.dialects.context import make_context
from npuc.dialects.npu_isa import IODesc, Program, Region

TINY = (Path(__file__).parent / "tiny.mlir").read_text()


class Constants:
    """Builds the constants region: each blob at the next 16-byte aligned offset."""

    def __init__(self, seed: int) -> None:
        self.data = bytearray()
        self.rng = np.random.default_rng(seed)

    def add(self, array: np.ndarray) -> int:
        offset = (len(self.data) + 15) // 16 * 16
        self.data += bytes(offset - len(self.data)) + np.ascontiguousarray(array).tobytes()
        return offset

    def weights(self, shape, dtype=np.int8) -> int:
        info = np.iinfo(dtype)
        return self.add(self.rng.integers(info.min, info.max + 1, shape, dtype=dtype))

    def bias_scale(self, channels: int, wzp: int = 0) -> int:
        rows = np.stack(
            [
                self.rng.integers(-5000, 5000, channels),
                self.rng.integers(1 << 30, 1 << 31, channels),
                self.rng.integers(30, 40, channels),
                np.full(channels, wzp),
            ],
            axis=1,
        )
        return self.add(rows.astype("<i4"))


def eltwise_program() -> Program:
    """Every eltwise kind, broadcasting by stride 0, u8, i8 and i16 operands."""
    c = Constants(1)
    alpha = c.weights((4,))
    a = tensor("mutable", 0, (2, 3, 4))
    b = tensor("mutable", 32, (2, 3, 4), "u8", (0, 0, 1))  # a [4] vector broadcast
    h = tensor("mutable", 64, (2, 3, 4), "i16")
    acc = [tensor("activations", 64 * i, (2, 3, 4)) for i in range(8)]
    scale = dict(
        left_shift=20,
        lhs_multiplier=1 << 30,
        lhs_shift=31,
        rhs_multiplier=1500000000,
        rhs_shift=32,
        multiplier=1 << 30,
        shift=50,
    )
    body = [
        inst("eltwise", (a, b, acc[0]), kind="add", lhs_zero_point=-3, rhs_zero_point=128, **scale),
        inst("eltwise", (a, b, acc[1]), kind="sub", rounding="tflite", **scale),
        inst("eltwise", (a, a, acc[2]), kind="mul", multiplier=1234567890, shift=38),
        inst("eltwise", (a, acc[2], acc[3]), kind="maximum"),
        inst("eltwise", (acc[3], a, acc[4]), kind="minimum", clamp_min=-20, clamp_max=90),
        inst(
            "eltwise", (a, b, acc[5]), kind="squared_difference", rounding="half_to_even", **scale
        ),
        inst(
            "eltwise",
            (a, tensor("constants", alpha, (2, 3, 4), strides=(0, 0, 1)), acc[6]),
            kind="prelu",
            multiplier=1 << 30,
            shift=30,
            rhs_multiplier=1 << 30,
            rhs_shift=33,
            rhs_zero_point=5,
        ),
        inst(
            "eltwise",
            (h, h, tensor("activations", 512, (2, 3, 4), "i16")),
            kind="div",
            rounding="tflite",
            overshift="x86",
            multiplier=1 << 30,
            shift=20,
        ),
        inst("dma", (acc[6], tensor("mutable", 128, (2, 3, 4))), deps=(6,)),
    ]
    return Program(
        "eltwise",
        (
            Region("constants", 64, "flash"),
            Region("mutable", 256, "dram"),
            Region("activations", 1024, "sram"),
        ),
        (
            IODesc("a", a, 0.05, -3),
            IODesc("b", tensor("mutable", 32, (4,), "u8"), 0.1, 128),
            IODesc("h", h, 2**-12, 0),
        ),
        (IODesc("prelu", tensor("mutable", 128, (2, 3, 4)), 0.05, 5),),
        (),
        tuple(body),
        bytes(c.data),
    )


def conv_pool_program() -> Program:
    """int16 convolution, every pool mode and flag, moves, a batched matmul, DMA chains."""
    c = Constants(2)
    w16 = c.weights((4, 2, 3, 3))
    t16 = c.bias_scale(4)
    wfc = c.weights((6, 8))
    tfc = c.bias_scale(6, wzp=3)
    lut = c.add(np.arange(-512, 512, dtype="<i2") // 3)
    x = tensor("mutable", 0, (1, 2, 5, 5), "i16")
    conv = tensor("sram", 0, (1, 4, 2, 2), "i16")
    body = [
        inst(
            "dma",
            (tensor("constants", w16, (4, 2, 3, 3)), tensor("sram", 64, (4, 2, 3, 3))),
            layer=0,
        ),
        inst(
            "conv2d",
            (x, tensor("sram", 64, (4, 2, 3, 3)), tensor("constants", t16, (4, 4), "i32"), conv),
            deps=(0,),
            layer=0,
            strides=(2, 2),
            pads=(1, 1, 0, 0),
            clamp_min=-1000,
            clamp_max=30000,
        ),
        inst(
            "pool",
            (conv, tensor("sram", 128, (1, 4, 2, 2))),
            layer=1,
            mode="sum",
            rounding="tflite",
            multiplier=1 << 30,
            shift=33,
            ifm_zero_point=0,
            ofm_zero_point=-7,
            clamp_min=-100,
        ),
        inst(
            "pool",
            (tensor("mutable", 64, (1, 3, 7, 7), "u8"), tensor("sram", 256, (1, 3, 4, 4), "u8")),
            layer=1,
            mode="avg",
            kernel=(3, 3),
            strides=(2, 2),
            pads=(1, 1, 1, 1),
            ceil_mode=True,
            count_include_pad=True,
            ifm_zero_point=128,
            ofm_zero_point=120,
            multiplier=1518500250,
            shift=31,
        ),
        inst(
            "pool",
            (tensor("mutable", 64, (1, 3, 7, 7), "u8"), tensor("sram", 320, (1, 3, 3, 3), "u8")),
            layer=1,
            mode="avg",
            kernel=(3, 3),
            strides=(2, 2),
            rounding="tflite",
            ifm_zero_point=128,
            ofm_zero_point=128,
        ),
        inst(
            "pool",
            (tensor("mutable", 64, (1, 3, 7, 7), "u8"), tensor("sram", 352, (1, 3, 3, 3), "u8")),
            layer=1,
            mode="max",
            kernel=(3, 3),
            strides=(2, 2),
            dilations=(2, 2),
            pads=(1, 1, 1, 1),
        ),
        inst("move", (conv, tensor("sram", 384, (1, 2, 2, 4), "i16")), perm=(0, 2, 3, 1)),
        inst(
            "move",
            (tensor("sram", 384, (1, 2, 2, 4), "i16"), tensor("sram", 448, (4, 8), "i16")),
            pads=(1, 0, 1, 0),
            pad_value=-5,
        ),
        inst(
            "lut",
            (
                tensor("sram", 448, (4, 8), "i16"),
                tensor("constants", lut, (1024,), "i16"),
                tensor("sram", 512, (4, 8), "i16"),
            ),
            table_base=-512,
        ),
        inst(
            "matmul",
            (
                tensor("mutable", 256, (2, 3, 8)),
                tensor("constants", wfc, (2, 8, 6), strides=(0, 1, 8)),
                tensor("constants", tfc, (6, 4), "i32"),
                tensor("activations", 0, (2, 3, 6)),
            ),
            layer=2,
            lhs_zero_point=-1,
            ofm_zero_point=2,
            rounding="half_up",
        ),
        inst(
            "dma",
            (tensor("activations", 0, (2, 3, 6)), tensor("mutable", 304, (2, 3, 6))),
            deps=(9,),
            layer=2,
        ),
        inst(
            "dma",
            (tensor("sram", 512, (4, 8), "i16"), tensor("mutable", 352, (4, 8), "i16")),
            deps=(8,),
        ),
    ]
    return Program(
        "conv_pool",
        (
            Region("constants", len(c.data) + 64, "flash"),
            Region("mutable", 512, "sram"),
            Region("activations", 256, "sram"),
            Region("sram", 1024, "sram"),
        ),
        (
            IODesc("x", x, 2**-10),
            IODesc("img", tensor("mutable", 64, (1, 3, 7, 7), "u8"), 0.02, 128),
            IODesc("v", tensor("mutable", 256, (2, 3, 8)), 0.1, -1),
        ),
        (
            IODesc("fc", tensor("mutable", 304, (2, 3, 6)), 0.2, 2),
            IODesc("lut", tensor("mutable", 352, (4, 8), "i16"), 2**-8),
        ),
        ("conv", "pools", "fc"),
        tuple(body),
        bytes(c.data),
        (("producer", "npuc tests"), ("note", 'two "quoted" words\\n')),
    )


def empty_program() -> Program:
    """No instructions, no constants region: the output aliases the input."""
    x = tensor("mutable", 0, (4,), "f32")
    return Program(
        "identity", (Region("mutable", 16, "sram"),), (IODesc("x", x),), (IODesc("y", x),), (), ()
    )


@pytest.fixture(scope="session")
def ctx() -> Context:
    return make_context()


@pytest.fixture(scope="session")
def parse(ctx: Context) -> Callable[[str], ModuleOp]:
    def parse_text(text: str) -> ModuleOp:
        return Parser(ctx, text).parse_module()

    return parse_text


@pytest.fixture(scope="session")
def programs(parse) -> dict[str, Program]:
    from npuc.backend.npubin import program_op

    tiny = program_op(parse(TINY))
    tiny.verify()
    return {
        "tiny": tiny.program(),
        "eltwise": eltwise_program(),
        "conv_pool": conv_pool_program(),
        "empty": empty_program(),
    }


@pytest.fixture(scope="session")
def tiny_text() -> str:
    return TINY


@pytest.fixture(scope="session")
def build() -> tuple[Callable, Callable]:
    """(tensor, inst): the helpers that build `TensorRef`s and `Instruction`s."""
    return tensor, inst
