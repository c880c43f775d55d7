"""Export a `qnn` (or mixed `nn`/`qnn`) module as an ONNX QDQ model, for onnxruntime or Netron.

`export_qdq(module)` writes the entry function in the QDQ form that onnxruntime's quantizer
emits: quantized constants become integer initializers read through DequantizeLinear
(per-axis weights keep their axis; i32 biases are dequantized at `scale_in * scale_w`), and
every `qnn` op becomes DequantizeLinear on its inputs, the float ONNX op, and QuantizeLinear
to its result type. A clamp (fused activation, narrow storage range) becomes Clip or Relu
before the QuantizeLinear. `nn` ops of hybrid modules are written as float ops.

What ONNX cannot say exactly:
- Requantization is derived from the types' scales, not from the integer multiplier and
  shift; a multiplier that does not match its types is an error. onnxruntime computes
  between DequantizeLinear and QuantizeLinear in float and rounds half to even, so results
  may differ from npuc's integer kernels by one step where a value falls on or next to a
  tie (and where npuc rounds half away from zero or with TFLite's double rounding).
- `qnn.lut` keeps only its table (the float function is unknown): the stored input is cast
  to int32, offset by the input storage minimum and used to Gather from the table.
- `qnn.add` aligns its operands in fixed point first; QDQ writes a float Add.
- i4 storage is written as int8 (values within the i4 range); i32 quantized tensors only as
  constants (biases).

Graph inputs and outputs keep the function's names and types (f32, or the storage integer
type of a quantized argument or result). Every other op result is named by its key in
npuc's interpreter (its layer name, `name#k`, or `%N`), so per-layer dumps of both runtimes
line up. Opset 21.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import Float32Type, IntegerType, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

from npuc import graph_io
from npuc.diagnostics import InternalError, NpucError
from npuc.dialects import nn, qnn
from npuc.dialects.arrays import int_values
from npuc.dialects.nn_base import ActivationFusable, shape_of
from npuc.dialects.quant_types import UniformQuantizedType, storage_range
from npuc.output_files import write_file
from npuc.runtime.nn_interpreter import FunctionRunner
from npuc.tensors import from_dense

OPSET = 21
IR_VERSION = 10
_ELEM = {"i8": TensorProto.INT8, "u8": TensorProto.UINT8, "i16": TensorProto.INT16}
_ELEM |= {"u16": TensorProto.UINT16, "i4": TensorProto.INT8, "i32": TensorProto.INT32}
_DTYPE = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16, "i4": np.int8}
_DTYPE |= {"i32": np.int32}
RTOL = 1e-5  # tolerance between an op's multiplier and the real multiplier of its types

__all__ = ["export_qdq", "save_qdq"]


def export_qdq(module: ModuleOp, *, name: str = "npuc") -> onnx.ModelProto:
    """The entry function of `module` as an ONNX QDQ model (checked with onnx.checker)."""
    try:
        func = graph_io.entry_function(module)
    except ValueError as e:
        raise NpucError(str(e)) from e
    model = _Exporter(func).run(name)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        raise InternalError(f"the exported ONNX model is invalid: {e}") from e
    return model


def save_qdq(module: ModuleOp, path: str) -> None:
    """Write the QDQ model to `path` (atomically, npuc/output_files.py)."""
    write_file(path, export_qdq(module).SerializeToString())


def _qtype(value: SSAValue) -> UniformQuantizedType | None:
    ty = value.type
    if isinstance(ty, TensorType) and isinstance(ty.element_type, UniformQuantizedType):
        return ty.element_type
    return None


def _layer(op: Operation) -> str | None:
    attr = op.properties.get("name")
    return getattr(attr, "data", None)


def _real(multiplier: int, shift: int) -> float:
    return multiplier * 2.0**-shift


class _Exporter:
    def __init__(self, func: FuncOp):
        self.func = func
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.names: dict[SSAValue, str] = {}  # a value's own tensor (int for quantized values)
        self.floats: dict[SSAValue, str] = {}  # the float tensor of a quantized value
        self.params: dict[UniformQuantizedType, tuple[str, str]] = {}
        self.used: set[str] = set()
        self.node_names: set[str] = set()
        self.unsupported: list[str] = []
        self.keys = FunctionRunner(func).keys

    # ------------------------------------------------------------------ names and graph

    def fresh(self, base: str, used: set[str] | None = None) -> str:
        """A new tensor name (or node name, with `used=self.node_names`) starting with `base`."""
        used = self.used if used is None else used
        name, k = base, 0
        while name in used:
            k += 1
            name = f"{base}_{k}"
        used.add(name)
        return name

    def node(self, op_type: str, inputs: Sequence[str], outputs: Sequence[str], base: str, **attrs):
        name = self.fresh(base, self.node_names)
        self.nodes.append(helper.make_node(op_type, list(inputs), list(outputs), name, **attrs))

    def init(self, array: np.ndarray, base: str) -> str:
        name = self.fresh(base)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def name_of(self, value: SSAValue, base: str) -> str:
        """A value's tensor name: its interpreter key (layer name, `name#k`, `%N`) if free."""
        if value not in self.names:
            self.names[value] = self.fresh(self.keys.get(value, base))
        return self.names[value]

    def run(self, model_name: str) -> onnx.ModelProto:
        block = self.func.body.block
        inputs = []
        for arg, name in zip(block.args, graph_io.input_names(self.func), strict=True):
            self.names[arg] = self.fresh(name)
            inputs.append(self.value_info(arg, self.names[arg]))
        returns = next(op for op in block.ops if isinstance(op, ReturnOp))
        out_names = graph_io.output_names(self.func)
        for value, name in zip(returns.operands, out_names, strict=True):
            constant = isinstance(value.owner, qnn.ConstantOp | nn.ConstantOp)
            if value not in self.names and name not in self.used and not constant:
                self.names[value] = self.fresh(name)
        for op in block.ops:
            if not isinstance(op, ReturnOp):
                self.export_op(op)
        if self.unsupported:
            kinds = ", ".join(sorted(set(self.unsupported)))
            raise NpucError(f"cannot export to ONNX QDQ: no ONNX form for {kinds}")
        outputs = []
        for value, name in zip(returns.operands, out_names, strict=True):
            tensor = self.quantized(value) if _qtype(value) else self.float_of(value)
            if tensor != name:
                name = self.fresh(name)
                self.node("Identity", [tensor], [name], name)
            outputs.append(self.value_info(value, name))
        graph = helper.make_graph(self.nodes, model_name, inputs, outputs, self.inits)
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="npuc"
        )
        model.ir_version = IR_VERSION
        return model

    def value_info(self, value: SSAValue, name: str) -> onnx.ValueInfoProto:
        q = _qtype(value)
        if q is not None:
            elem = self.elem(q)
        elif isinstance(value.type, TensorType) and isinstance(
            value.type.element_type, Float32Type
        ):
            elem = TensorProto.FLOAT
        elif isinstance(value.type, TensorType) and isinstance(
            value.type.element_type, IntegerType
        ):
            elem = {64: TensorProto.INT64, 32: TensorProto.INT32}.get(
                value.type.element_type.width.data, TensorProto.INT8
            )
        else:
            raise NpucError(f"cannot export a value of type {value.type}")
        return helper.make_tensor_value_info(name, elem, list(shape_of(value)))

    def elem(self, q: UniformQuantizedType) -> int:
        return _ELEM[q.storage]

    # ------------------------------------------------------------------ quantization nodes

    def qparams(self, q: UniformQuantizedType, tensor: str) -> tuple[str, str]:
        """Scale and zero-point initializers of a type (1-D for per-axis types), shared."""
        if q not in self.params:
            scales = np.array(q.scale_values(), np.float32)
            zps = np.array(q.zero_point_values(), _DTYPE[q.storage])
            if not q.per_axis:
                scales, zps = scales.reshape(()), zps.reshape(())
            self.params[q] = (
                self.init(scales, f"{tensor}_scale"),
                self.init(zps, f"{tensor}_zero_point"),
            )
        return self.params[q]

    def axis(self, q: UniformQuantizedType) -> dict[str, int]:
        return {"axis": q.axis.data} if q.per_axis else {}

    def quantized(self, value: SSAValue) -> str:
        """The integer tensor of a quantized value (constants become initializers)."""
        if value not in self.names and isinstance(value.owner, qnn.ConstantOp):
            q = _qtype(value)
            stored = from_dense(value.owner.value)
            dtype = _DTYPE[q.storage] if q is not None else np.int32
            base = f"{_layer(value.owner) or 'const'}_quantized"
            self.names[value] = self.init(stored.view(dtype) if q else stored.astype(dtype), base)
        return self.names[value]

    def float_of(self, value: SSAValue, out: str | None = None) -> str:
        """A float tensor holding `value` (DequantizeLinear of quantized values, once).

        `out` names the DequantizeLinear's result (a graph output), which then is not shared.
        """
        q = _qtype(value)
        if q is None:
            if isinstance(value.owner, nn.ConstantOp) and value not in self.names:
                array = from_dense(value.owner.value)
                self.names[value] = self.init(array, _layer(value.owner) or "const")
            return self.names[value]
        if value in self.floats and out is None:
            return self.floats[value]
        q_name = self.quantized(value)
        scale, zp = self.qparams(q, q_name)
        shared = out is None
        out = out or self.fresh(f"{q_name}_dequantized")
        self.node(
            "DequantizeLinear",
            [q_name, scale, zp],
            [out],
            f"{q_name}_DequantizeLinear",
            **self.axis(q),
        )
        if shared:
            self.floats[value] = out
        return out

    def bias_of(self, value: SSAValue, scales: np.ndarray) -> str:
        """An i32 bias constant dequantized at the accumulator scales."""
        q_name = self.quantized(value)
        scale = self.init(scales.astype(np.float32), f"{q_name}_scale")
        zp = self.init(np.zeros(scales.shape, np.int32), f"{q_name}_zero_point")
        out = self.fresh(f"{q_name}_dequantized")
        self.node(
            "DequantizeLinear", [q_name, scale, zp], [out], f"{q_name}_DequantizeLinear", axis=0
        )
        return out

    def quantize_to(
        self, source: str, result: SSAValue, base: str, clamp: tuple[int, int] | None = None
    ) -> None:
        """QuantizeLinear of a float tensor to `result`'s type, after a Clip if `clamp` narrows."""
        q = _qtype(result)
        assert q is not None
        if q.storage == "i32":
            raise NpucError(f"layer '{base}': ONNX cannot quantize to i32 ({q})")
        lo, hi = clamp if clamp is not None else (q.qmin, q.qmax)
        full = storage_range(
            8 if q.storage == "i4" else q.storage_bits.data, bool(q.storage_signed.data)
        )
        if (lo, hi) != full and q.per_axis:
            raise NpucError(f"layer '{base}': a clamp on a per-axis type has no QDQ form")
        if (lo, hi) != full:
            source = self.clip(
                source, q, lo if lo > full[0] else None, hi if hi < full[1] else None, base
            )
        out = self.name_of(result, base)
        scale, zp = self.qparams(q, out)
        self.node(
            "QuantizeLinear", [source, scale, zp], [out], f"{base}_QuantizeLinear", **self.axis(q)
        )
        self.floats.pop(result, None)

    def clip(
        self, source: str, q: UniformQuantizedType, lo: int | None, hi: int | None, base: str
    ) -> str:
        out = self.fresh(f"{base}_clipped")
        if lo == q.zero_point and hi is None:
            self.node("Relu", [source], [out], f"{base}_Relu")
            return out
        bounds = [
            ""
            if b is None
            else self.init(np.array(q.scale * (b - q.zero_point), np.float32), f"{base}_{k}")
            for k, b in (("min", lo), ("max", hi))
        ]
        self.node("Clip", [source, *bounds], [out], f"{base}_Clip")
        return out

    # ------------------------------------------------------------------ ops

    def export_op(self, op: Operation) -> None:
        base = _layer(op) or op.name.split(".")[-1]
        if isinstance(op, qnn.ConstantOp | nn.ConstantOp):
            return  # written where used
        handler = QNN_EXPORT.get(type(op)) or NN_EXPORT.get(type(op))
        if handler is None:
            self.unsupported.append(op.name)
            for r in op.results:  # names for its users, so every op without a form is listed
                self.names[r] = self.fresh(f"{base}_unsupported")
            return
        handler(self, op, base)


def _check_multiplier(op: qnn.Requantizing, reals: np.ndarray, base: str) -> None:
    multipliers, shifts = list(int_values(op.multiplier)), list(int_values(op.shift))
    actual = np.array([_real(m, s) for m, s in zip(multipliers, shifts, strict=True)])
    actual, expected = np.broadcast_arrays(actual, np.asarray(reals, np.float64).reshape(-1))
    if not np.allclose(actual, expected, rtol=RTOL, atol=0):
        raise NpucError(
            f"layer '{base}' ({op.name}): its multipliers {actual.tolist()} do not match its "
            f"types' scales ({expected.tolist()}); QDQ can only express the latter"
        )


def _scales(value: SSAValue) -> np.ndarray:
    q = _qtype(value)
    assert q is not None
    return np.array(q.scale_values(), np.float64)


def _requantizing(onnx_op: str, attrs=None):
    """Float op on dequantized inputs, quantized to the result (weights, bias, clamp)."""

    def export(ex: _Exporter, op: qnn.Requantizing, base: str) -> None:
        operands = list(op.operands)
        out_scale = _scales(op.results[0])[0]
        if isinstance(op, qnn.Conv2dOp | qnn.FullyConnectedOp):
            acc = _scales(op.operands[0])[0] * _scales(op.operands[1])
            inputs = [ex.float_of(operands[0]), ex.float_of(operands[1])]
            if len(operands) > 2:
                channels = shape_of(operands[1])[0]
                inputs.append(ex.bias_of(operands[2], np.broadcast_to(acc, (channels,))))
        elif isinstance(op, qnn.AddOp | qnn.SubOp):
            acc = np.array([max(_scales(v)[0] for v in operands)])
            for side, v in (("lhs_", operands[0]), ("rhs_", operands[1])):
                m = getattr(op, f"{side}multiplier").value.data
                s = getattr(op, f"{side}shift").value.data
                total = _real(m, s) * 2.0**op.left_shift.value.data * _real(*_single(op))
                if not np.isclose(total, _scales(v)[0] / out_scale, rtol=RTOL, atol=0):
                    raise NpucError(
                        f"layer '{base}' ({op.name}): its multipliers do not match its types"
                    )
            inputs = [ex.float_of(v) for v in operands]
        else:
            acc = np.prod([_scales(v)[0] for v in operands]) * np.ones(1)
            inputs = [ex.float_of(v) for v in operands]
        if not isinstance(op, qnn.AddOp | qnn.SubOp):
            _check_multiplier(op, acc / out_scale, base)
        out = ex.fresh(f"{base}_float")
        ex.node(onnx_op, inputs, [out], base, **(attrs(op) if attrs else {}))
        ex.quantize_to(out, op.results[0], base, op.clamp_bounds())

    return export


def _single(op: qnn.Requantizing) -> tuple[int, int]:
    return int_values(op.multiplier)[0], int_values(op.shift)[0]


def _movement(onnx_op: str, attrs=None, extra_inputs=None):
    """A data-movement op: DequantizeLinear, the float op, QuantizeLinear to the same type."""

    def export(ex: _Exporter, op: Operation, base: str) -> None:
        inputs = [ex.float_of(v) for v in op.operands]
        if extra_inputs is not None:
            inputs += [
                ex.init(a, f"{base}_{k}") if a is not None else "" for k, a in extra_inputs(op)
            ]
        outs = [ex.fresh(f"{base}_float") for _ in op.results]
        ex.node(onnx_op, inputs, outs, base, **(attrs(op) if attrs else {}))
        for out, result in zip(outs, op.results, strict=True):
            if _qtype(result) is None:
                ex.names[result] = out
            else:
                ex.quantize_to(out, result, base)

    return export


def _window(op, *keys: str) -> dict[str, object]:
    found = {}
    names = {
        "kernel": "kernel_shape",
        "strides": "strides",
        "pads": "pads",
        "dilations": "dilations",
    }
    for key in keys:
        attr = op.properties.get(key)
        if attr is not None and key in names:
            found[names[key]] = list(int_values(attr))
    for flag in ("ceil_mode", "count_include_pad"):
        attr = op.properties.get(flag)
        if attr is not None and flag in keys:
            found[flag] = int(attr.value.data)
    return found


def _conv_attrs(op) -> dict[str, object]:
    return {**_window(op, "strides", "pads", "dilations"), "group": op.groups.value.data}


def _slice_inputs(op) -> list[tuple[str, np.ndarray]]:
    starts, ends, steps = (
        list(int_values(op.starts)),
        list(int_values(op.ends)),
        list(int_values(op.steps)),
    )
    # nn.slice's end -1 means "before index 0"; ONNX clamps INT64_MIN there.
    ends = [
        e if e != -1 else (np.iinfo(np.int64).min if s < 0 else 0)
        for e, s in zip(ends, steps, strict=True)
    ]
    return [
        ("starts", np.array(starts, np.int64)),
        ("ends", np.array(ends, np.int64)),
        ("axes", np.arange(len(starts), dtype=np.int64)),
        ("steps", np.array(steps, np.int64)),
    ]


def _pad_inputs(op) -> list[tuple[str, np.ndarray | None]]:
    value = np.zeros((), np.float32)
    if op.value is not None:
        raw = op.value.value.data
        q = _qtype(op.operands[0])
        value = np.array(raw if q is None else q.scale * (raw - q.zero_point), np.float32)
    return [("pads", np.array(list(int_values(op.pads)), np.int64)), ("value", value)]


def _resize_inputs(op) -> list[tuple[str, np.ndarray | None]]:
    return [("roi", None), ("scales", np.array(op.scales.get_values(), np.float32))]


def _resize_attrs(op) -> dict[str, object]:
    mode = op.properties.get("mode")
    return {
        "mode": mode.data if mode is not None else "nearest",
        "coordinate_transformation_mode": op.coordinate_mode.data,
        "nearest_mode": op.nearest_mode.data,
    }


def _split_inputs(op) -> list[tuple[str, np.ndarray]]:
    axis = op.axis.value.data % len(shape_of(op.operands[0]))
    return [("split", np.array([shape_of(r)[axis] for r in op.results], np.int64))]


def _quantize(ex: _Exporter, op: qnn.QuantizeOp, base: str) -> None:
    q = _qtype(op.output)
    ex.quantize_to(ex.float_of(op.input), op.output, base, (q.qmin, q.qmax))


def _dequantize(ex: _Exporter, op: qnn.DequantizeOp, base: str) -> None:
    ex.names[op.output] = ex.float_of(op.input, ex.names.get(op.output))


def _requantize(ex: _Exporter, op: qnn.RequantizeOp, base: str) -> None:
    q_in, q_out = _qtype(op.input), _qtype(op.output)
    reals = np.array(q_in.scale_values()) / np.array(q_out.scale_values())
    _check_multiplier(op, reals, base)
    ex.quantize_to(ex.float_of(op.input), op.output, base, op.clamp_bounds())


def _lut(ex: _Exporter, op: qnn.LutOp, base: str) -> None:
    q_in, q_out = _qtype(op.input), _qtype(op.output)
    lo = storage_range(q_in.storage_bits.data, bool(q_in.storage_signed.data))[0]
    wide = ex.fresh(f"{base}_index")
    ex.node("Cast", [ex.quantized(op.input)], [wide], f"{base}_Cast", to=TensorProto.INT32)
    if lo:
        offset = ex.init(np.array(-lo, np.int32), f"{base}_offset")
        shifted = ex.fresh(f"{base}_index")
        ex.node("Add", [wide, offset], [shifted], f"{base}_Add")
        wide = shifted
    table = ex.init(from_dense(op.table).astype(_DTYPE[q_out.storage]), f"{base}_table")
    ex.node("Gather", [table, wide], [ex.name_of(op.output, base)], base, axis=0)


def _float_activation(
    ex: _Exporter, op: ActivationFusable, out: str, fused: str, base: str
) -> None:
    """The fused activation of an nn op, as its own node from `out` to `fused`."""
    kind = op.activation.data  # type: ignore[union-attr]
    if kind == "leaky_relu":
        ex.node(
            "LeakyRelu", [out], [fused], f"{base}_LeakyRelu", alpha=op.activation_alpha.value.data
        )
        return
    bounds = [
        ex.init(np.array(b.value.data, np.float32), f"{base}_clip") if b is not None else ""
        for b in (op.activation_min, op.activation_max)
    ]
    ex.node("Clip", [out, *bounds], [fused], f"{base}_Clip")


def _float(onnx_op: str, attrs=None, extra_inputs=None):
    """An nn op as the same float ONNX op."""

    def export(ex: _Exporter, op: Operation, base: str) -> None:
        inputs = [ex.float_of(v) for v in op.operands]
        if extra_inputs is not None:
            inputs += [
                ex.init(a, f"{base}_{k}") if a is not None else "" for k, a in extra_inputs(op)
            ]
        fused = isinstance(op, ActivationFusable) and op.activation is not None
        outs = [ex.fresh(f"{base}_float") if fused else ex.name_of(r, base) for r in op.results]
        ex.node(onnx_op, inputs, outs, base, **(attrs(op) if attrs else {}))
        if fused:
            _float_activation(ex, op, outs[0], ex.name_of(op.results[0], base), base)  # type: ignore[arg-type]

    return export


def _reshape_inputs(op) -> list[tuple[str, np.ndarray]]:
    return [("shape", np.array(shape_of(op.results[0]), np.int64))]


def _perm(op) -> dict[str, object]:
    return {"perm": list(int_values(op.perm))}


def _axis(op) -> dict[str, object]:
    return {"axis": op.axis.value.data}


def _block(op) -> dict[str, object]:
    attrs: dict[str, object] = {"blocksize": op.block_size.value.data}
    if isinstance(op, qnn.DepthToSpaceOp | nn.DepthToSpaceOp):
        attrs["mode"] = op.mode.data
    return attrs


QNN_EXPORT = {
    qnn.QuantizeOp: _quantize,
    qnn.DequantizeOp: _dequantize,
    qnn.RequantizeOp: _requantize,
    qnn.LutOp: _lut,
    qnn.Conv2dOp: _requantizing("Conv", _conv_attrs),
    qnn.FullyConnectedOp: _requantizing("Gemm", lambda op: {"transB": 1}),
    qnn.MatMulOp: _requantizing("MatMul"),
    qnn.AddOp: _requantizing("Add"),
    qnn.SubOp: _requantizing("Sub"),
    qnn.MulOp: _requantizing("Mul"),
    qnn.AvgPool2dOp: _requantizing(
        "AveragePool",
        lambda op: _window(op, "kernel", "strides", "pads", "ceil_mode", "count_include_pad"),
    ),
    qnn.GlobalAvgPoolOp: _requantizing("GlobalAveragePool"),
    qnn.MaxPool2dOp: _movement(
        "MaxPool", lambda op: _window(op, "kernel", "strides", "pads", "dilations", "ceil_mode")
    ),
    qnn.GlobalMaxPoolOp: _movement("GlobalMaxPool"),
    qnn.ReshapeOp: _movement("Reshape", extra_inputs=_reshape_inputs),
    qnn.TransposeOp: _movement("Transpose", _perm),
    qnn.ConcatOp: _movement("Concat", _axis),
    qnn.SplitOp: _movement("Split", _axis, _split_inputs),
    qnn.SliceOp: _movement("Slice", extra_inputs=_slice_inputs),
    qnn.PadOp: _movement("Pad", lambda op: {"mode": op.mode.data}, _pad_inputs),
    qnn.ResizeOp: _movement("Resize", _resize_attrs, _resize_inputs),
    qnn.DepthToSpaceOp: _movement("DepthToSpace", _block),
    qnn.SpaceToDepthOp: _movement("SpaceToDepth", _block),
}

NN_EXPORT = {
    nn.Conv2dOp: _float("Conv", _conv_attrs),
    nn.FullyConnectedOp: _float("Gemm", lambda op: {"transB": 1}),
    nn.MatMulOp: _float("MatMul"),
    nn.AddOp: _float("Add"),
    nn.SubOp: _float("Sub"),
    nn.MulOp: _float("Mul"),
    nn.DivOp: _float("Div"),
    nn.MaximumOp: _float("Max"),
    nn.MinimumOp: _float("Min"),
    nn.ReluOp: _float("Relu"),
    nn.SigmoidOp: _float("Sigmoid"),
    nn.TanhOp: _float("Tanh"),
    nn.ExpOp: _float("Exp"),
    nn.LogOp: _float("Log"),
    nn.SqrtOp: _float("Sqrt"),
    nn.AbsOp: _float("Abs"),
    nn.NegOp: _float("Neg"),
    nn.ErfOp: _float("Erf"),
    nn.HardSwishOp: _float("HardSwish"),
    nn.SoftplusOp: _float("Softplus"),
    nn.LeakyReluOp: _float("LeakyRelu", lambda op: {"alpha": op.alpha.value.data}),
    nn.ClipOp: _float(
        "Clip",
        extra_inputs=lambda op: [
            (k, None if a is None else np.array(a.value.data, np.float32))
            for k, a in (("min", op.min), ("max", op.max))
        ],
    ),
    nn.SoftmaxOp: _float("Softmax", _axis),
    nn.MaxPool2dOp: _float(
        "MaxPool", lambda op: _window(op, "kernel", "strides", "pads", "dilations", "ceil_mode")
    ),
    nn.AvgPool2dOp: _float(
        "AveragePool",
        lambda op: _window(op, "kernel", "strides", "pads", "ceil_mode", "count_include_pad"),
    ),
    nn.GlobalAvgPoolOp: _float("GlobalAveragePool"),
    nn.GlobalMaxPoolOp: _float("GlobalMaxPool"),
    nn.ReshapeOp: _float("Reshape", extra_inputs=_reshape_inputs),
    nn.TransposeOp: _float("Transpose", _perm),
    nn.ConcatOp: _float("Concat", _axis),
    nn.SliceOp: _float("Slice", extra_inputs=_slice_inputs),
    nn.PadOp: _float("Pad", lambda op: {"mode": op.mode.data}, _pad_inputs),
    nn.DepthToSpaceOp: _float("DepthToSpace", _block),
    nn.SpaceToDepthOp: _float("SpaceToDepth", _block),
}
