"""npuc's printer prints every constant as xDSL's own printer does (npuc/printing.py prints
large integer constants from their bytes, without xDSL's unpacking)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    IndexType,
    IntegerType,
    ModuleOp,
    Signedness,
    TensorType,
)
from xdsl.printer import Printer

from npuc.printing import print_module

RNG = np.random.default_rng(0)


def xdsl_text(module: ModuleOp) -> str:
    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue()


def constant(element, values: np.ndarray, shape: list[int]) -> ModuleOp:
    attr = DenseIntOrFPElementsAttr.from_list(TensorType(element, shape), values.tolist())
    return ModuleOp([ConstantOp(attr)])


CASES = {
    "i8": (IntegerType(8), RNG.integers(-128, 128, 300), [3, 100]),
    "ui8": (IntegerType(8, Signedness.UNSIGNED), RNG.integers(0, 256, 101), [101]),
    "i32": (IntegerType(32), RNG.integers(-(2**31), 2**31, 128), [2, 64]),
    "i1": (IntegerType(1), RNG.integers(0, 2, 200), [200]),
    "index": (IndexType(), RNG.integers(-5, 5, 150), [150]),
    "i8 splat": (IntegerType(8), np.full(500, -3), [500]),
    "i16 last differs": (IntegerType(16), np.array([7] * 199 + [8]), [200]),
    "i8 at the limit": (IntegerType(8), RNG.integers(-128, 128, 100), [100]),
    "f32": (Float32Type(), RNG.standard_normal(300).astype(np.float32), [300]),
}


@pytest.mark.parametrize("case", CASES)
def test_constants_print_as_xdsl_prints_them(case):
    element, values, shape = CASES[case]
    module = constant(element, values, shape)
    text = print_module(module)
    assert text == xdsl_text(module)
    hexed = '"0x' in text
    assert hexed == (case in ("i8", "ui8", "i32", "i1", "index", "i16 last differs", "f32"))


STRINGS = {
    "every byte": bytes(range(256)).decode("latin-1"),
    "layer name": "MobilenetV2/expanded_conv_12/depthwise/Relu6;conv 3x3",
    "quotes and backslashes": 'a "b" \\ c\\"\n\t',
    "unicode": "Schicht_ü_层_🙂",
    "empty": "",
}


@pytest.mark.parametrize("case", STRINGS)
def test_string_literals_print_as_xdsl_prints_them(case):
    from xdsl.dialects.builtin import StringAttr
    from xdsl.dialects.test import TestOp

    module = ModuleOp([TestOp(attributes={"name": StringAttr(STRINGS[case])})])
    text = print_module(module)
    assert text == xdsl_text(module)
    assert text.count('"') >= 2
