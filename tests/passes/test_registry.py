"""The registry's pass names load the right classes, and options print and parse back."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import FloatAttr, f32
from xdsl.utils.arg_spec import parse_spec

from npuc.dialects import nn
from npuc.registry import DEFAULT_PIPELINE, PASSES


@pytest.mark.parametrize("name", sorted(PASSES))
def test_pass_loads_under_its_name(name):
    cls = PASSES[name]()
    assert cls.name == name
    instance = cls()
    assert type(instance).from_spec(parse_spec(str(instance))) == instance


def test_default_pipeline(graph, check, ops):
    """batch_norm + relu on an input ends as mul + add with a fused relu."""
    g = graph((2, 3, 4, 4))
    params = [g.const(np.full(3, v, np.float32)) for v in (2.0, 0.5, 0.1, 16.0)]
    bn = g.op(nn.BatchNormOp, [g.inputs[0], *params], {"epsilon": FloatAttr(0.0, f32)})
    module = g.module(g.op(nn.ReluOp, [bn]))
    for name in DEFAULT_PIPELINE.split(","):
        check(module, PASSES[name]()())
    assert [op.name for op in ops(module) if op.name != "nn.constant"] == ["nn.mul", "nn.add"]
    (add,) = ops(module, nn.AddOp)
    assert add.activation.data == "clip" and add.activation_min.value.data == 0.0
