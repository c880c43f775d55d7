"""Stateful models (graph_io state pairs) in calibration, quantization and comparison.

A stateful model is calibrated as one stream: the state starts at its initial value
(`nn.state_init`, else zeros) and every call's state results are the next call's state
arguments (`StateCarrier`); data sets feed only the other inputs. Quantizing keeps what
is carried exact: a state argument and its result get one range (the union of theirs,
`shared_state_ranges`), so they get one type, and `quantize_state` converts a result
whose type still differs (a requantize, or a quantize from float) and stores quantized
initial values as the argument type's stored integers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FunctionType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation, SSAValue

from npuc.diagnostics import NpucError
from npuc.dialects import qnn
from npuc.dialects.arrays import ints
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.graph_io import STATE_INIT_ATTR, entry_function, initial_state, state_names
from npuc.integer import quantize_multiplier
from npuc.runtime.nn_interpreter import tensor_names
from npuc.tensors import from_dense, to_dense

from .lowering import storage_element
from .schemes import quantize_array

Range = tuple[float, float]
RangeSource = Callable[[str, str, int, bool], Range | None]


def state_arguments(func: FuncOp) -> set[int]:
    """Indices of the arguments that are state (fed by the previous call, not by data)."""
    return {arg for arg, _, _ in state_names(func)}


class StateCarrier:
    """Completes each call's arguments with the current state and takes the new state."""

    def __init__(self, module: ModuleOp):
        func = entry_function(module)
        self.pairs = state_names(func)
        self.count = len(func.args)
        self.state = initial_state(module) if self.pairs else {}

    def __bool__(self) -> bool:
        return bool(self.pairs)

    def arguments(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """All positional arguments: `inputs` fill the non-state ones, in order."""
        by_index = {arg: self.state[name] for arg, _, name in self.pairs}
        data = iter(inputs)
        return [by_index[i] if i in by_index else next(data) for i in range(self.count)]

    def named(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Named arguments: `inputs` plus the current state."""
        return {**inputs, **self.state}

    def update(self, results: Sequence[np.ndarray] | Mapping[str, np.ndarray]) -> None:
        """Take the state results of a call (positional results, or outputs by name)."""
        for _, result, name in self.pairs:
            self.state[name] = results[name] if isinstance(results, Mapping) else results[result]


def _state_keys(module: ModuleOp) -> list[tuple[str, str]]:
    """(argument key, result key) of each state pair, as calibration names the tensors."""
    func = entry_function(module)
    keys = tensor_names(func)
    ret = func.body.block.last_op
    assert isinstance(ret, ReturnOp)
    return [(keys[func.args[arg]], keys[ret.operands[res]]) for arg, res, _ in state_names(func)]


def shared_state_ranges(
    module: ModuleOp, ranges: Mapping[str, Range] | RangeSource
) -> Mapping[str, Range] | RangeSource:
    """`ranges` with each state argument and its result given the union of their ranges."""
    groups = {key: pair for pair in _state_keys(module) for key in pair}
    if not groups:
        return ranges
    if isinstance(ranges, Mapping):
        merged = dict(ranges)
        for pair in set(groups.values()):
            found = [ranges[k] for k in pair if k in ranges]
            if found:
                union = (min(r[0] for r in found), max(r[1] for r in found))
                merged.update(dict.fromkeys(pair, union))
        return merged
    source = ranges

    def shared(tensor: str, strategy: str, bits: int, symmetric: bool) -> Range | None:
        if tensor not in groups:
            return source(tensor, strategy, bits, symmetric)
        found = [r for k in groups[tensor] if (r := source(k, strategy, bits, symmetric))]
        if not found:
            return None
        return min(r[0] for r in found), max(r[1] for r in found)

    return shared


def quantize_state(module: ModuleOp, rounding: str = "half_away_from_zero") -> None:
    """After quantization: state results take their argument's type; initial values follow it.

    A quantized state argument whose result has another type gets a qnn.requantize (or a
    qnn.quantize from float) before the return; its float initial value becomes stored
    integers of the argument's type.
    """
    func = entry_function(module)
    pairs = state_names(func)
    if not pairs:
        return
    ret = func.body.block.last_op
    assert isinstance(ret, ReturnOp)
    stored = func.attributes.get(STATE_INIT_ATTR)
    init: dict[str, Attribute] = dict(stored.data) if isinstance(stored, DictionaryAttr) else {}
    for arg, res, name in pairs:
        ty = func.args[arg].type
        assert isinstance(ty, TensorType)
        q = ty.element_type
        if not isinstance(q, UniformQuantizedType):
            continue
        value: SSAValue = ret.operands[res]
        if value.type != ty:
            source = value.type.element_type if isinstance(value.type, TensorType) else None
            if isinstance(source, UniformQuantizedType):
                if source.per_axis or q.per_axis:
                    raise NpucError(
                        f"state '{name}' is quantized per axis; npuc carries per-tensor state only"
                    )
                m0, shift = quantize_multiplier(source.scale / q.scale)
                op: Operation = qnn.RequantizeOp.create(
                    operands=[value],
                    result_types=[ty],
                    properties={
                        "multiplier": ints([m0]),
                        "shift": ints([shift]),
                        "rounding": StringAttr(rounding),
                    },
                )
            else:
                op = qnn.QuantizeOp.create(operands=[value], result_types=[ty])
            func.body.block.insert_op_before(op, ret)
            ret.operands = [op.results[0] if i == res else v for i, v in enumerate(ret.operands)]
        if name in init:
            stored = init[name]
            assert isinstance(stored, DenseIntOrFPElementsAttr)
            values = np.asarray(from_dense(stored))
            if values.dtype.kind == "f":
                init[name] = to_dense(quantize_array(values, q, None), storage_element(q))
    if init:
        func.attributes[STATE_INIT_ATTR] = DictionaryAttr(init)
    func.function_type = FunctionType.from_lists(
        list(func.function_type.inputs), [v.type for v in ret.operands]
    )
    module.verify()
