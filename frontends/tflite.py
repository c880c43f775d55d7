"""TFLite importer: the main subgraph of a .tflite model becomes a `func.func @main`.

Float operators become `nn` ops; int8 operators become `qnn` ops with the model's
own scales and zero points and TFLite's integer arithmetic (`rounding = "tflite"`,
multipliers computed as TFLite computes them; see tflite_int8.py and tflite_int16.py;
the table of converters is tflite_converters.py).

Layout: every value keeps its TFLite (NHWC) shape, so element-wise ops, reshapes
and axes map one to one. Spatial ops (convolutions, pools, resizes) are wrapped
in transposes NHWC -> NCHW -> NHWC; a transpose that undoes the one producing its
input is folded at import, so chains of spatial ops stay NCHW throughout.
Ops are named after their first output tensor. Custom operators other than MediaPipe's
Convolution2DTransposeBias come from plugins (tflite_converters.plugin_converter).
Unsupported operators, and custom ones no plugin provides, are collected and reported
together in one diagnostic. DEQUANTIZE and DENSIFY of constants are folded first
(tflite_constants), so layers see constant float32 filters.

Resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, CALL_ONCE) become
state arguments/results of `@main` with initial values in `nn.state_init`; see
tflite_state. Further subgraphs are supported only as CALL_ONCE initialisers;
control flow (IF, WHILE) is reported as unsupported. A model with several
signatures is imported from its first subgraph, with a warning.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects.builtin import IntegerType, ModuleOp, StringAttr, TensorType, f32, i32, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from npuc.diagnostics import NpucError, issues_report
from npuc.dialects import nn, qnn
from npuc.dialects.nn_base import NNOperation
from npuc.dialects.quant_types import UniformQuantizedType
from npuc.graph_io import ENTRY, io_attrs
from npuc.limits import check_tensor
from npuc.locations import name_locations
from npuc.plugin_registry import plugin_names
from npuc.plugins import PluginError, missing_plugins_report
from npuc.tensors import to_dense

from . import tflite_converters as converters
from .tflite_constants import fold_constants
from .tflite_context import (
    CONTROL_FLOW,
    STORAGE,
    Converter,
    OpContext,
    Unsupported,
    element_type,
    is_quantized,
    tensor_type,
)
from .tflite_model import Graph, Operator, Tensor, decode_all

__all__ = ["import_tflite", "supported_ops"]


def supported_ops() -> dict[str, list[str]]:
    """TFLite builtin operators the importer understands, for float and int8 models."""
    return {"float": converters.names("float"), "int8": converters.names("int8")}


def import_tflite(
    model: str | os.PathLike[str] | bytes | bytearray | memoryview,
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    inputs: Sequence[str] | None = None,
    outputs: Sequence[str] | None = None,
    location: str | None = None,
) -> ModuleOp:
    """Import a .tflite model (path or bytes) as a module of `nn`/`qnn` ops.

    `input_shapes` overrides input shapes (dynamic dimensions); `inputs`/`outputs`
    cut a sub-graph by tensor names.
    """
    if isinstance(model, bytes | bytearray | memoryview):
        data, location = bytes(model), location or "<tflite bytes>"
    else:
        path = os.fspath(model)
        location = location or path
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise NpucError(f"cannot read TFLite model: {e.strerror or e}", location) from None
    all_graphs = [fold_constants(g) for g in decode_all(data, location)]
    graph = all_graphs[0]
    from .tflite_state import signature_subgraphs

    if len(signed := signature_subgraphs(data)) > 1:
        warnings.warn(
            f"{location}: the model has {len(signed)} signatures on different subgraphs; "
            "npuc imports the first subgraph only",
            stacklevel=2,
        )
    stateful = any(op.op_type in STATEFUL for op in graph.operators)
    graphs = all_graphs if stateful else None
    return _Import(graph, location, graphs).run(input_shapes or {}, inputs, outputs)


# Operators that need the model's other subgraphs (or its variables) to be imported.
STATEFUL = frozenset({"VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE"})


class _Import:
    def __init__(
        self,
        graph: Graph,
        location: str,
        graphs: Sequence[Graph] | None = None,
        visiting: frozenset[int] = frozenset({0}),
    ):
        from .tflite_state import State

        self.graph = graph
        self.location = location
        self.graphs = graphs or [graph]  # every subgraph, for CALL_ONCE
        self.visiting = visiting
        self.state: State | None = None
        self.by_name = {t.name: t for t in graph.tensors}
        self.block = Block()
        self.values: dict[int, SSAValue] = {}
        self.issues: list[tuple[str, str, str]] = []  # (op type, op name, reason)
        self.needs_plugin: dict[str, None] = {}  # custom ops no plugin provides, in order
        self.poisoned: set[int] = set()

    def error(self, message: str) -> NpucError:
        return NpucError(message, self.location)

    def _tensors(self, names: Sequence[str] | None, default: Sequence[int], kind: str) -> list[int]:
        if names is None:
            return list(default)
        if not names:
            raise self.error(f"the list of {kind}s to cut at is empty")
        unknown = [n for n in names if n not in self.by_name]
        if unknown:
            shown = ", ".join(t.name for t in self.graph.tensors[:40])
            raise self.error(
                f"unknown {kind} tensor name(s): {', '.join(unknown)}; tensors are: {shown}"
            )
        return [self.by_name[n].index for n in names]

    def run(
        self,
        input_shapes: Mapping[str, Sequence[int]],
        inputs: Sequence[str] | None,
        outputs: Sequence[str] | None,
    ) -> ModuleOp:
        graph = self.graph
        in_ids = self._tensors(inputs, graph.inputs, "input")
        out_ids = self._tensors(outputs, graph.outputs, "output")
        in_names = [graph.tensors[t].name for t in in_ids]
        unknown = sorted(set(input_shapes) - set(in_names))
        if unknown:
            raise self.error(
                f"--input-shape names unknown input(s) {', '.join(unknown)}; "
                f"inputs are: {', '.join(in_names)}"
            )
        arg_types = [self._arg_type(graph.tensors[t], input_shapes) for t in in_ids]
        state = None
        if any(op.op_type in STATEFUL for op in graph.operators):
            from .tflite_state import State

            state = self.state = State(self, self.graphs, self.visiting)
        states = state.names if state else []
        self.block = Block(arg_types=[*arg_types, *(state.types.values() if state else ())])
        self.values.update(zip(in_ids, self.block.args, strict=False))
        if state:
            state.bind(self.block.args[len(in_ids) :])
            # CALL_ONCE has no outputs: run the initialisers whatever the schedule.
            for op in graph.operators:
                if op.op_type == "CALL_ONCE":
                    self._convert(op)
        for op in self._schedule(in_ids, out_ids, state.roots() if state else ()):
            self._convert(op)
        if self.issues or self.needs_plugin:
            raise self._issues_error()
        try:
            results = [self.value(graph.tensors[t]) for t in out_ids]
        except (Unsupported, ValueError, VerifyException) as e:
            raise self.error(f"output: {e}") from None
        results += state.results() if state else []
        self.block.add_op(ReturnOp(*results))
        self._erase_dead()
        out_names = [graph.tensors[t].name for t in out_ids]
        func = FuncOp(
            ENTRY,
            ([a.type for a in self.block.args], [r.type for r in results]),
            Region(self.block),
            arg_attrs=io_attrs([*in_names, *states], [None] * len(in_names) + states),
            res_attrs=io_attrs([*out_names, *states], [None] * len(out_names) + states),
        )
        if state:
            func.attributes.update(state.init_attr())
        module = ModuleOp([func])
        try:
            module.verify()
        except VerifyException as e:
            raise self.error(f"the imported module does not verify (an importer bug): {e}") from e
        name_locations(module)  # loc("LAYER") from the model's own names
        return module

    def _erase_dead(self) -> None:
        """Drop ops left unused by folded transpose pairs (all importer ops are pure)."""
        for op in reversed(list(self.block.ops)):
            if isinstance(op, NNOperation) and all(not r.uses for r in op.results):
                self.block.erase_op(op)

    def _arg_type(self, t: Tensor, input_shapes: Mapping[str, Sequence[int]]) -> TensorType:
        if t.data is not None:
            raise self.error(f"input '{t.name}' is a constant tensor")
        shape = list(t.shape)
        if t.signature is not None and len(t.signature) == len(shape):
            shape = [
                1 if s < 0 and i == 0 else d
                for i, (s, d) in enumerate(zip(t.signature, shape, strict=True))
            ]
            if any(s < 0 for s in t.signature[1:]) and t.name not in input_shapes:
                dims = ",".join(
                    "?" if s < 0 and i else str(d)
                    for i, (s, d) in enumerate(zip(t.signature, shape, strict=True))
                )
                raise self.error(
                    f"input '{t.name}' has dynamic dimensions; give its shape with "
                    f"--input-shape {t.name}:{dims} (a size for each ?), or an --input array "
                    "or calibration data of that shape"
                )
        if t.name in input_shapes:
            given = [int(d) for d in input_shapes[t.name]]
            if len(given) != len(shape) or any(d <= 0 for d in given):
                raise self.error(
                    f"input shape {given} for '{t.name}' must have rank "
                    f"{len(shape)} and positive dimensions"
                )
            dynamic = [s < 0 for s in t.signature] if t.signature else [False] * len(shape)
            if any(d != g and not free for d, g, free in zip(shape, given, dynamic, strict=True)):
                # LiteRT's ResizeInputTensorStrict: only the signature's -1 dimensions resize.
                declared = "x".join(
                    "?" if free else str(d) for d, free in zip(shape, dynamic, strict=True)
                )
                raise self.error(
                    f"--input-shape {t.name}:{','.join(map(str, given))} contradicts the "
                    f"model's shape {declared} for input '{t.name}' (only its dynamic "
                    "dimensions, shown as ?, may be given a size)"
                )
            shape = given
        if t.dtype != np.float32 and not is_quantized(t):
            raise self.error(
                f"input '{t.name}' has type {t.type_name}; npuc takes float32 "
                "or quantized int8/uint8/int16 inputs"
            )
        check_tensor(shape, t.dtype.itemsize, f"input '{t.name}'", self.location)
        try:
            return tensor_type(t, shape)
        except (Unsupported, VerifyException) as e:
            raise self.error(f"input '{t.name}': {e}") from None

    def _schedule(
        self, in_ids: Sequence[int], out_ids: Sequence[int], roots: Sequence[Operator] = ()
    ) -> list[Operator]:
        """The operators needed for `out_ids` (and `roots`) from `in_ids` and constants,
        in model order."""
        producer = {t: op for op in self.graph.operators for t in op.outputs}
        needed: set[int] = {op.index for op in roots}
        stack = [t for t in out_ids] + [t for op in roots for t in op.inputs]
        seen: set[int] = set(in_ids)
        while stack:
            t = stack.pop()
            if t in seen or t < 0:
                continue
            seen.add(t)
            op = producer.get(t)
            if op is None:
                if self.graph.tensors[t].data is None:
                    raise self.error(
                        f"tensor '{self.graph.tensors[t].name}' has no producer "
                        "and is not a graph input or constant"
                    )
                continue
            if op.index not in needed:
                needed.add(op.index)
                stack.extend(op.inputs)
        return [op for op in self.graph.operators if op.index in needed]

    def _convert(self, op: Operator) -> None:
        ctx = OpContext(self, op)
        if any(t in self.poisoned for t in op.inputs):
            self.poisoned.update(op.outputs)
            return
        try:
            if op.op_type in STATEFUL and self.state is not None:
                self.state.convert(ctx)
                return
            convert = self._converter(ctx)
            if convert is None:  # a custom operator no plugin provides
                self.needs_plugin[op.op_type.replace("custom:", "custom::", 1)] = None
                self.poisoned.update(op.outputs)
                return
            if (wrong := converters.operand_error(ctx)) is not None:
                raise ValueError(wrong)
            results = convert(ctx)
            results = [results] if isinstance(results, SSAValue) else list(results)
            if len(results) != len(op.outputs):
                raise Unsupported(f"expected {len(op.outputs)} results, made {len(results)}")
            for t, value in zip(op.outputs, results, strict=True):
                self._bind(self.graph.tensors[t], value)
        except Unsupported as e:
            self.issues.append((op.op_type, ctx.name, str(e)))
            self.poisoned.update(op.outputs)
        except PluginError:
            raise
        except (ValueError, NpucError, VerifyException) as e:
            text = e.message if isinstance(e, NpucError) else str(e)
            self.issues.append((op.op_type, ctx.name, f"invalid operator: {text}"))
            self.poisoned.update(op.outputs)
        except (IndexError, KeyError, TypeError, ArithmeticError, AssertionError):
            # A malformed operator the checks above missed (an option of a wrong kind, a
            # count that does not fit) is the model's fault; say what the converter saw.
            shapes = [list(self.graph.tensors[t].shape) for t in op.inputs if t >= 0]
            reason = f"its inputs (shapes {shapes}) or options do not fit {op.op_type}"
            self.issues.append((op.op_type, ctx.name, f"invalid operator: {reason}"))
            self.poisoned.update(op.outputs)

    def _converter(self, ctx: OpContext) -> Converter | None:
        """The operator's converter; None for a custom operator that no plugin provides."""
        op = ctx.op
        # The data tensors decide: constant inputs may be int32 shapes or axes.
        data = [self.graph.tensors[t] for t in (*op.inputs, *op.outputs) if t >= 0]
        data = [t for t in data if t.data is None or t.dtype in STORAGE]
        quantized = any(is_quantized(t) for t in data) and op.op_type != "DEQUANTIZE"
        if op.custom and (op.op_type, "float") not in converters.CONVERTERS:
            return converters.plugin_converter(ctx, quantized)
        convert = converters.converter(ctx, quantized)
        if convert is None and op.op_type in CONTROL_FLOW:
            refs = ", ".join(str(op.options.get(k)) for k in CONTROL_FLOW[op.op_type])
            raise Unsupported(f"control flow over subgraphs ({refs}) is not supported")
        if convert is None:
            if any((op.op_type, kind) in converters.CONVERTERS for kind in ("float", "int8")):
                kind = "quantized" if quantized else "float"
                raise Unsupported(f"{kind} {op.op_type} not supported")
            raise Unsupported("operator not supported")
        return convert

    def _bind(self, t: Tensor, value: SSAValue) -> None:
        want = tensor_type(t)
        if value.type != want:
            raise ValueError(
                f"result {value.type} does not match the tensor type {want} of '{t.name}'"
            )
        self.values[t.index] = value

    def value(self, t: Tensor) -> SSAValue:
        if t.index not in self.values:
            if t.data is None:
                raise ValueError(f"tensor '{t.name}' has no value")
            self.values[t.index] = self.constant(t.data, t.name, element_type(t))
        return self.values[t.index]

    def constant(self, array: np.ndarray, name: str, ty: Attribute | None) -> SSAValue:
        array = np.asarray(array)
        if isinstance(ty, UniformQuantizedType):
            dense = to_dense(
                array.astype(ty.storage_dtype()), IntegerType(max(8, ty.storage_bits.data))
            )
            op = qnn.ConstantOp.create(
                properties={"value": dense, "name": StringAttr(name)},
                result_types=[TensorType(ty, list(array.shape))],
            )
        else:
            if ty is None:
                ty = {np.dtype(np.int32): i32, np.dtype(np.int64): i64}.get(array.dtype, f32)
            op = nn.ConstantOp(to_dense(array, ty), name)
        self.block.add_op(op)
        return op.results[0]

    def _issues_error(self) -> NpucError:
        installed = plugin_names() if self.needs_plugin else []
        title = f"unsupported TFLite operators ({len(self.issues)})"
        report = issues_report([(title, self.issues)])
        return NpucError(
            missing_plugins_report(list(self.needs_plugin), installed, report), self.location
        )
