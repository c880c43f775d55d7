"""Pre-quantized ONNX models: QDQ graphs (QuantizeLinear/DequantizeLinear around float ops) and
QOperator graphs (QLinearConv, QLinearMatMul, com.microsoft QLinearAdd, QGemm, ...).

`import_onnx(..., prequantized=MODE)` chooses what happens to them:

- "keep" (default): the model's own quantization is kept. A float node whose inputs come from
  DequantizeLinear and whose output goes to QuantizeLinear (a Relu/Clip in between folds into
  the clamp) becomes one `qnn` op with the model's scales and zero points; QLinear ops map the
  same way. Requantization multipliers are `quantize_multiplier(s_x * s_w / s_y)` and round
  half to even, like ONNX. onnxruntime computes `round(acc * float32(s_x * s_w / s_y))` in
  float32, so its results can differ by one step where the product lands on or next to a tie.
  Whatever no `qnn` op can express exactly stays float between `qnn.dequantize` and
  `qnn.quantize` (hybrid), never approximated.
- "dequantize": every QuantizeLinear/DequantizeLinear pair disappears and QLinear ops become
  their float ops on dequantized constants, so the float model can be re-calibrated. Where a
  quantized tensor's zero point is its storage minimum (real 0 is the lowest value, which is
  how onnxruntime's quantizer drops a Relu or Clip), an `nn.relu` keeps that clamp; upper
  saturation bounds are dropped (a calibrated range is not a model op).

Integer (QOperator) tensors fed to plain ONNX ops (MaxPool, Reshape, Flatten, ...) map to the
`qnn` data-movement ops. Patterns live in onnx_qdq_patterns.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType, f32
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue

from npuc.diagnostics import NpucError
from npuc.dialects import nn, qnn
from npuc.dialects.nn_base import NNOperation, shape_of
from npuc.dialects.quant_types import STORAGE_TYPES, UniformQuantizedType, storage_range

from .onnx_graph import Converter, GraphImporter, NodeContext, Unsupported, Value
from .onnx_qdq_patterns import (
    FOLDS_ACTIVATION,
    PATTERNS,
    ROUNDING,
    Abort,
    Bounds,
    Build,
    QConst,
    Target,
    dequantize_const,
    qtype_of,
    quantize_f32,
)
from .onnx_qdq_translate import translate

MODES = ("keep", "dequantize")
MS = "com.microsoft"
DEFAULT_DOMAINS = ("", "ai.onnx")
FLT_MAX = 3.4e38
STORAGE = {np.dtype(d): n for d, n in [(np.int8, "i8"), (np.uint8, "u8"), (np.int16, "i16")]}
STORAGE |= {np.dtype(np.uint16): "u16", np.dtype(np.int32): "i32"}
STORAGE_RANGES = {name: storage_range(*STORAGE_TYPES[name]) for name in STORAGE.values()}

# Plain ONNX ops that may read integer (QOperator) tensors: data movement maps to qnn ops;
# the others' results are not quantized (indices, shapes), so the float view is exact.
INTEGER_MOVEMENT = {
    "Reshape",
    "Flatten",
    "Squeeze",
    "Unsqueeze",
    "Transpose",
    "MaxPool",
    "GlobalMaxPool",
    "Concat",
    "Split",
    "Slice",
    "Pad",
    "Resize",
    "DepthToSpace",
    "SpaceToDepth",
    "Identity",
    "Dropout",
}
INTEGER_FLOAT_VIEW = {"ArgMax", "ArgMin", "Shape", "Size"}


@dataclass(frozen=True)
class QLinearSpec:
    """A QLinear op as its float op: (value, scale, zero point) input triples and the output's.

    `axis` is the per-channel axis of the second input's scales (-1: last); `bias` an int32
    input at scale s_0 * s_1; `variadic` triples start at input 2 (QLinearConcat).
    """

    float_op: str
    inputs: tuple[tuple[int, int, int], ...]
    output: tuple[int, int]
    axis: int = 0
    bias: int | None = None
    variadic: bool = False


_BINARY = ((0, 1, 2), (3, 4, 5))
QLINEAR: dict[str, QLinearSpec] = {
    "QLinearConv": QLinearSpec("Conv", _BINARY, (6, 7), axis=0, bias=8),
    "QLinearMatMul": QLinearSpec("MatMul", _BINARY, (6, 7), axis=-1),
    f"{MS}:QLinearAdd": QLinearSpec("Add", _BINARY, (6, 7)),
    f"{MS}:QLinearMul": QLinearSpec("Mul", _BINARY, (6, 7)),
    f"{MS}:QGemm": QLinearSpec("Gemm", _BINARY, (7, 8), bias=6),
    f"{MS}:QLinearAveragePool": QLinearSpec("AveragePool", ((0, 1, 2),), (3, 4)),
    f"{MS}:QLinearGlobalAveragePool": QLinearSpec("GlobalAveragePool", ((0, 1, 2),), (3, 4)),
    f"{MS}:QLinearSigmoid": QLinearSpec("Sigmoid", ((0, 1, 2),), (3, 4)),
    f"{MS}:QLinearLeakyRelu": QLinearSpec("LeakyRelu", ((0, 1, 2),), (3, 4)),
    f"{MS}:QLinearSoftmax": QLinearSpec("Softmax", ((0, 1, 2),), (3, 4)),
    f"{MS}:QLinearConcat": QLinearSpec("Concat", (), (0, 1), variadic=True),
}
_NOT_FLOAT_ATTRS = {"channels_last", "opset"}
DEFAULT_DOMAIN_OPS = {"QuantizeLinear", "DequantizeLinear"} | {k for k in QLINEAR if ":" not in k}


def is_quantized(graph: onnx.GraphProto) -> bool:
    """Whether the graph has quantization nodes (QDQ or QOperator)."""
    for node in graph.node:
        key = node.op_type if node.domain in DEFAULT_DOMAINS else f"{node.domain}:{node.op_type}"
        if node.op_type in ("QuantizeLinear", "DequantizeLinear") or key in QLINEAR:
            return True
    return False


# --------------------------------------------------------------------------- quantization types


def make_qtype(
    scale: np.ndarray, zero_point: np.ndarray | None, storage: str, axis: int, rank: int
) -> UniformQuantizedType:
    """The type of ONNX quantization parameters (a 1-D scale with several entries is per-axis)."""
    scale, zp = np.asarray(scale), None if zero_point is None else np.asarray(zero_point)
    if scale.ndim > 1 or (zp is not None and zp.ndim > 1):
        raise Unsupported("blocked quantization (scales of rank > 1) not supported")
    scales = scale.astype(np.float32).reshape(-1).astype(np.float64)
    if not scales.size or not np.all(np.isfinite(scales) & (scales > 0)):
        raise Unsupported("quantization scales must be positive and finite")
    zps = np.zeros(scales.size, np.int64) if zp is None else zp.reshape(-1).astype(np.int64)
    if zps.size == 1 and scales.size > 1:
        zps = np.repeat(zps, scales.size)
    if zps.size != scales.size:
        raise ValueError(f"{scales.size} scales but {zps.size} zero points")
    lo, hi = STORAGE_RANGES[storage]
    if zps.size and (zps.min() < lo or zps.max() > hi):
        raise ValueError(f"zero points {zps.tolist()} outside the {storage} range [{lo}, {hi}]")
    if scales.size == 1:
        return UniformQuantizedType(storage, float(scales[0]), int(zps[0]))
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} out of range for rank {rank}")
    return UniformQuantizedType(storage, scales.tolist(), zps.tolist(), axis=axis % rank)


def storage_name(dtype: np.dtype) -> str:
    name = STORAGE.get(np.dtype(dtype))
    if name is None:
        raise Unsupported(f"{np.dtype(dtype)} quantized tensors not supported")
    return name


def _rank(value: Value) -> int:
    return value.ndim if isinstance(value, np.ndarray) else len(shape_of(value))


def _known(importer: GraphImporter, name: str) -> np.ndarray | None:
    """A tensor's value if it is a constant already known (no lookup side effects on misses)."""
    if not name:
        return None
    if name in importer.values or name in importer.initializers:
        value = importer.lookup(name)
        return value if isinstance(value, np.ndarray) else None
    return None


def _attrs(node: onnx.NodeProto) -> dict[str, object]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _quantize_storage(attrs: Mapping[str, object], zero_point: np.ndarray | None) -> str:
    """QuantizeLinear's output type: the zero point's, else output_dtype, else uint8."""
    if zero_point is not None:
        return storage_name(zero_point.dtype)
    elem = int(attrs.get("output_dtype", 0) or 0)  # type: ignore[call-overload]
    if elem:
        return storage_name(onnx.helper.tensor_dtype_to_np_dtype(elem))
    return "u8"


def _check_unblocked(attrs: Mapping[str, object]) -> None:
    if attrs.get("block_size", 0):
        raise Unsupported("blocked quantization (block_size) not supported")


# --------------------------------------------------------------------------- import state


class QuantState:
    """What one import knows about quantized tensors, keyed by ONNX tensor name."""

    def __init__(self, keep: bool, users: Mapping[str, list[onnx.NodeProto]], outputs: set[str]):
        self.keep = keep
        self.users = users
        self.outputs = outputs
        self.dq: dict[str, SSAValue] = {}  # DequantizeLinear outputs: the quantized value
        self.const_q: dict[str, QConst] = {}  # DequantizeLinear of constants: integers and type
        self.folded: set[str] = set()  # outputs of Relu/Clip nodes folded into their producer

    def operand(self, ctx: NodeContext, i: int) -> SSAValue | QConst | None:
        """Input i in quantized form: a quantized run-time value, a quantized constant, or None."""
        if not ctx.has(i):
            return None
        name = ctx.node.input[i]
        if name in self.const_q:
            return self.const_q[name]
        if name in self.dq:
            return self.dq[name]
        value = ctx.input(i)
        return value if qtype_of(value) is not None else None

    def consumers(self, tensor: str) -> list[onnx.NodeProto] | None:
        """The nodes reading `tensor`; None if it is also a graph output."""
        return None if tensor in self.outputs else self.users.get(tensor, [])

    def clip_bounds(self, importer: GraphImporter, node: onnx.NodeProto) -> Bounds | None:
        """Real bounds of a Relu or Clip node (None where a bound is not a known constant)."""
        if node.op_type == "Relu":
            return (0.0, None)
        if node.op_type != "Clip":
            return None
        if importer.opset < 11:
            attrs = _attrs(node)
            found = [attrs.get("min"), attrs.get("max")]
        else:
            found = []
            for i in (1, 2):
                name = node.input[i] if i < len(node.input) else ""
                value = _known(importer, name)
                if name and (value is None or value.size != 1):
                    return None
                found.append(None if value is None else float(value.reshape(())))
        bounds = [None if v is None or abs(float(v)) >= FLT_MAX else float(v) for v in found]  # type: ignore[arg-type]
        return bounds[0], bounds[1]

    def node_qtype(
        self, importer: GraphImporter, node: onnx.NodeProto
    ) -> UniformQuantizedType | None:
        """A QuantizeLinear node's per-tensor output type, if its parameters are known constants."""
        attrs = _attrs(node)
        scale = _known(importer, node.input[1]) if len(node.input) > 1 else None
        zp = _known(importer, node.input[2]) if len(node.input) > 2 and node.input[2] else None
        if (
            scale is None
            or scale.size != 1
            or (len(node.input) > 2 and node.input[2] and zp is None)
        ):
            return None
        try:
            _check_unblocked(attrs)
            return make_qtype(scale, zp, _quantize_storage(attrs, zp), 0, 1)
        except (Unsupported, ValueError):
            return None

    def target(self, ctx: NodeContext, fold: bool) -> Target | None:
        """The QuantizeLinear after this node's only output (through a foldable Relu/Clip)."""
        if len(ctx.node.output) != 1:
            return None
        users = self.consumers(ctx.node.output[0])
        bounds: Bounds = (None, None)
        folded = None
        if fold and users and len(users) == 1 and users[0].op_type in ("Relu", "Clip"):
            found = self.clip_bounds(ctx.importer, users[0])
            if found is not None and users[0].domain in DEFAULT_DOMAINS:
                folded, bounds = users[0], found
                users = self.consumers(folded.output[0])
        if not users or len(users) != 1 or not _is_quantize(users[0]):
            return None
        if users[0].output[0] not in ctx.importer.used:
            return None
        qt = self.node_qtype(ctx.importer, users[0])
        return None if qt is None else Target(qt, bounds, folded)

    def only_quantized_users(self, tensors: Iterable[str]) -> bool:
        for tensor in tensors:
            users = self.consumers(tensor) if tensor else []
            if users is None or (tensor and not users) or not all(map(_is_quantize, users)):
                return False
        return True


def _is_quantize(node: onnx.NodeProto) -> bool:
    return node.op_type == "QuantizeLinear" and node.domain in (*DEFAULT_DOMAINS, MS)


# --------------------------------------------------------------------------- converters


def converters(
    base: Mapping[str, Converter], graph: onnx.GraphProto, mode: str, outputs: Sequence[str]
) -> dict[str, Converter]:
    """The importer's converters for a quantized graph in `mode` ("keep" or "dequantize")."""
    if mode not in MODES:
        raise NpucError(f"prequantized must be one of {', '.join(MODES)}, got '{mode}'")
    keep = mode == "keep"
    users: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in dict.fromkeys(node.input):
            if name:
                users.setdefault(name, []).append(node)
    states: weakref.WeakKeyDictionary[GraphImporter, QuantState] = weakref.WeakKeyDictionary()

    def state(ctx: NodeContext) -> QuantState:
        # One state per GraphImporter: shape probes import parts of the graph separately.
        if ctx.importer not in states:
            states[ctx.importer] = QuantState(keep, users, set(outputs))
        return states[ctx.importer]

    table = {k: _wrap(k, c, state) for k, c in base.items()} if keep else dict(base)
    for domain in ("", f"{MS}:"):
        table[f"{domain}QuantizeLinear"] = lambda ctx: _quantize_linear(ctx, state(ctx))
        table[f"{domain}DequantizeLinear"] = lambda ctx: _dequantize_linear(ctx, state(ctx))
    for key, spec in QLINEAR.items():
        table[key] = _qlinear_converter(spec, base, state)
    return table


def finish(module: ModuleOp) -> ModuleOp:
    """Erase the ops that patterns left unused (float views of quantized values, mostly)."""
    for func in module.ops:
        if isinstance(func, FuncOp):
            for op in reversed(list(func.body.block.ops)):
                if (
                    isinstance(op, NNOperation)
                    and op.results
                    and not any(r.uses for r in op.results)
                ):
                    _erase(op)
    return module


def _emit(
    ctx: NodeContext, cls: type[NNOperation], operand: SSAValue, element: object, named: bool = True
) -> SSAValue:
    """A qnn.quantize (rounding half to even) or qnn.dequantize of `operand`."""
    props = {"name": StringAttr(ctx.name)} if named else {}
    if cls is qnn.QuantizeOp:
        props["rounding"] = StringAttr(ROUNDING)
    op = cls.create(
        operands=[operand],
        properties=props,
        result_types=[TensorType(element, shape_of(operand))],  # type: ignore[arg-type]
    )
    op.verify()
    ctx.importer.block.add_op(op)
    return op.results[0]


def _floor_relu(ctx: NodeContext, value: SSAValue, q: UniformQuantizedType) -> SSAValue:
    """Dequantize mode: keep the clamp at real 0 of a type whose zero point is its minimum."""
    if not q.per_axis and q.zero_point == q.qmin:
        return ctx.emit(nn.ReluOp, [value])
    return value


def _quantize_linear(ctx: NodeContext, st: QuantState) -> list[Value]:
    _check_unblocked(ctx.attrs)
    x = ctx.input(0)
    zp = ctx.need_const(2, "zero point") if ctx.has(2) else None
    storage = _quantize_storage(ctx.attrs, zp)
    qt = make_qtype(ctx.need_const(1, "scale"), zp, storage, int(ctx.attr("axis", 1)), _rank(x))
    if isinstance(x, np.ndarray):
        return [quantize_f32(x, qt).astype(qt.storage_dtype())]
    if not st.keep:
        return [_floor_relu(ctx, x, qt)]
    q = x if qtype_of(x) is not None else st.dq.get(ctx.node.input[0])
    if q is None:
        return [_emit(ctx, qnn.QuantizeOp, x, qt)]
    build = Build(ctx)
    try:
        y = build.requantize(q, qt)
        build.commit()
    except Abort as e:
        raise Unsupported(f"cannot requantize {qtype_of(q)} to {qt}") from e
    return [y]


def _dequantize_linear(ctx: NodeContext, st: QuantState) -> list[Value]:
    _check_unblocked(ctx.attrs)
    x = ctx.input(0)
    axis = int(ctx.attr("axis", 1))
    zp = ctx.need_const(2, "zero point") if ctx.has(2) else None
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in "iu":
            raise Unsupported(f"DequantizeLinear of a {x.dtype} constant")
        qt = make_qtype(ctx.need_const(1, "scale"), zp, storage_name(x.dtype), axis, x.ndim)
        if st.keep:
            st.const_q[ctx.node.output[0]] = (x, qt)
        return [dequantize_const(x, qt)]
    q = qtype_of(x)
    if q is None:
        return [x]  # already real values (dequantize mode, or a float fallback of a movement op)
    qt = make_qtype(ctx.need_const(1, "scale"), zp, q.storage, axis, _rank(x))
    if qt != q:
        raise Unsupported(f"its parameters ({qt}) differ from its input's type ({q})")
    st.dq[ctx.node.output[0]] = x
    return [_emit(ctx, qnn.DequantizeOp, x, f32)]


# --------------------------------------------------------------------------- float nodes


def _ops_after(block_op: Operation | None, ctx: NodeContext) -> list[Operation]:
    op = block_op.next_op if block_op is not None else ctx.importer.block.first_op
    found = []
    while op is not None:
        found.append(op)
        op = op.next_op
    return found


def _float_run(
    ctx: NodeContext, base: Converter, views: Mapping[str, SSAValue]
) -> tuple[Sequence[Value | None], list[Operation], dict[SSAValue, SSAValue]]:
    """Run a float converter with quantized inputs seen through `qnn.dequantize` views.

    Returns its results, the ops it emitted, and the map from views to quantized values.
    """
    importer = ctx.importer
    mapping: dict[SSAValue, SSAValue] = {}
    saved = {}
    for name, q in views.items():
        view = _emit(ctx, qnn.DequantizeOp, q, f32, named=False)
        mapping[view] = q
        saved[name] = importer.values[name]
        importer.values[name] = view
    mark = importer.block.last_op
    try:
        results = base(ctx)
    finally:
        importer.values.update(saved)
    return results, _ops_after(mark, ctx), mapping


def _replace(ops: list[Operation]) -> None:
    for op in reversed(ops):
        _erase(op)


def _erase(op: Operation) -> None:
    block = op.parent_block()
    if block is not None:
        block.erase_op(op)
    else:
        op.erase()


def _translated(
    ctx: NodeContext,
    results: Sequence[Value | None],
    ops: list[Operation],
    mapping: dict[SSAValue, SSAValue],
    target: Target | None,
    pad_value: int | None = None,
) -> list[Value | None] | None:
    """The qnn form of a float converter's emitted ops (erased on success), or None."""
    values = [r for r in results if r is not None]
    if not values or not all(isinstance(r, SSAValue) for r in values):
        return None
    translated = translate(ctx, ops, mapping, values, target, pad_value)  # type: ignore[arg-type]
    if translated is None:
        return None
    _replace(ops)
    found = iter(translated)
    return [None if r is None else next(found) for r in results]


def _wrap(op_type: str, base: Converter, state: Callable[[NodeContext], QuantState]) -> Converter:
    """A float converter that first tries the quantized form of its node (keep mode)."""

    def convert(ctx: NodeContext) -> Sequence[Value | None]:
        st = state(ctx)
        if ctx.node.output and ctx.node.output[0] in st.folded:
            return [ctx.input(0)]  # a Relu/Clip already applied by its producer's clamp
        present = [i for i in range(ctx.num_inputs) if ctx.has(i)]
        quantized = {ctx.node.input[i]: v for i in present if qtype_of(v := ctx.input(i))}
        if quantized:
            return _integer_inputs(ctx, base, quantized)
        if not any(ctx.node.input[i] in st.dq for i in present):
            return base(ctx)
        target = st.target(ctx, op_type in FOLDS_ACTIVATION)
        emitter = PATTERNS.get(op_type)
        results: Sequence[Value | None] | None
        if emitter is not None:
            results = emitter(ctx, st, target) if target is not None else None
            if results is None:
                return base(ctx)
        else:
            if target is None and not st.only_quantized_users(ctx.node.output):
                return base(ctx)
            views = {
                v: st.dq[ctx.node.input[i]]
                for i in present
                if ctx.node.input[i] in st.dq and isinstance(v := ctx.input(i), SSAValue)
            }
            floats, ops, _ = _float_run(ctx, base, {})
            results = _translated(ctx, floats, ops, views, target)
            if results is None:
                return floats
        if target is not None and target.fold is not None:
            st.folded.add(target.fold.output[0])
        return results

    return convert


def _integer_inputs(
    ctx: NodeContext, base: Converter, quantized: Mapping[str, SSAValue]
) -> Sequence[Value | None]:
    """A plain ONNX op on integer (QOperator) tensors: data movement becomes qnn ops."""
    op_type = ctx.op_type
    if op_type not in INTEGER_MOVEMENT | INTEGER_FLOAT_VIEW:
        raise Unsupported(f"{op_type} on quantized (integer) tensors not supported")
    floats, ops, mapping = _float_run(ctx, base, quantized)
    if op_type in INTEGER_FLOAT_VIEW:
        return floats
    pad_value = None
    if op_type == "Pad":
        # Integer Pad pads with a stored value (ONNX's default 0), not with a real one.
        stored = ctx.const(2) if ctx.opset >= 11 else np.asarray(ctx.attr("value", 0.0))
        pad_value = 0 if stored is None else int(np.asarray(stored).reshape(-1)[0])
    results = _translated(ctx, floats, ops, mapping, None, pad_value)
    if results is None:
        raise Unsupported(f"{op_type} on quantized (integer) tensors has no qnn form here")
    return results


# --------------------------------------------------------------------------- QLinear ops


def _qlinear_converter(
    spec: QLinearSpec, base: Mapping[str, Converter], state: Callable[[NodeContext], QuantState]
) -> Converter:
    def convert(ctx: NodeContext) -> Sequence[Value | None]:
        return _qlinear(ctx, state(ctx), spec, base[spec.float_op])

    return convert


def _qlinear(
    ctx: NodeContext, st: QuantState, spec: QLinearSpec, base: Converter
) -> Sequence[Value | None]:
    """A QLinear op as its float op on synthetic inputs, quantized like the QDQ pattern."""
    if ctx.attr("channels_last", 0):
        raise Unsupported("channels_last=1 not supported")
    node, importer = ctx.node, ctx.importer
    triples = spec.inputs
    if spec.variadic:
        triples = tuple((i, i + 1, i + 2) for i in range(2, ctx.num_inputs, 3))
    names: list[str] = []
    runtime: dict[str, SSAValue] = {}
    types: list[UniformQuantizedType] = []
    for k, (vi, si, zi) in enumerate(triples):
        name = f"{node.output[0]}\x00{k}"
        value = ctx.input(vi)
        zp = ctx.need_const(zi, "zero point") if ctx.has(zi) else None
        if isinstance(value, np.ndarray):
            storage = storage_name(value.dtype)
        elif (q := qtype_of(value)) is not None:
            storage = q.storage
        else:
            storage = storage_name(zp.dtype) if zp is not None else "u8"
        axis = spec.axis
        if spec.float_op == "Gemm":
            axis = 0 if ctx.attr("transB", 0) else 1
        qt = make_qtype(ctx.need_const(si, "scale"), zp, storage, axis, _rank(value))
        types.append(qt)
        if isinstance(value, np.ndarray):
            importer.values[name] = dequantize_const(value, qt)
            if st.keep:
                st.const_q[name] = (value, qt)
        elif st.keep:
            if qtype_of(value) is None:
                value = _emit(ctx, qnn.QuantizeOp, value, qt)
            elif qtype_of(value) != qt:
                raise Unsupported(f"input {vi} is typed {qtype_of(value)} but read as {qt}")
            importer.values[name] = runtime[name] = value
        else:
            importer.values[name] = value
        names.append(name)
    if spec.bias is not None and ctx.has(spec.bias):
        names.append(_bias_input(ctx, st, spec.bias, types))
    out_q = None
    if ctx.has(spec.output[0]):
        so, zo = spec.output
        zp = ctx.need_const(zo, "zero point") if ctx.has(zo) else None
        storage = storage_name(zp.dtype) if zp is not None else "u8"
        out_q = make_qtype(ctx.need_const(so, "scale"), zp, storage, 0, 1)
        if out_q.per_axis:
            raise Unsupported("per-axis output quantization not supported")
    synthetic = onnx.helper.make_node(spec.float_op, names, [node.output[0]], name=node.name)
    synthetic.attribute.extend(a for a in node.attribute if a.name not in _NOT_FLOAT_ATTRS)
    sctx = NodeContext(importer, synthetic, ctx.name)
    if "opset" in ctx.attrs:
        sctx.opset = int(ctx.attrs["opset"])  # type: ignore[call-overload]
    if st.keep and out_q is not None:
        results = _qlinear_pattern(sctx, st, spec, base, runtime, Target(out_q))
        if results is not None:
            return results
    floats, _, _ = _float_run(sctx, base, runtime)
    if out_q is None:
        return floats
    y = floats[0]
    assert isinstance(y, SSAValue)
    return [_emit(ctx, qnn.QuantizeOp, y, out_q) if st.keep else _floor_relu(ctx, y, out_q)]


def _qlinear_pattern(
    sctx: NodeContext,
    st: QuantState,
    spec: QLinearSpec,
    base: Converter,
    runtime: Mapping[str, SSAValue],
    target: Target,
) -> Sequence[Value | None] | None:
    emitter = PATTERNS.get(spec.float_op)
    if emitter is not None:
        return emitter(sctx, st, target)
    floats, ops, mapping = _float_run(sctx, base, runtime)
    translated = _translated(sctx, floats, ops, mapping, target)
    if translated is None:
        _replace(ops)
    return translated


def _bias_input(
    ctx: NodeContext, st: QuantState, index: int, types: list[UniformQuantizedType]
) -> str:
    """The int32 bias (scale s_0 * s_1 per output channel) as a synthetic quantized constant."""
    bias = ctx.need_const(index, "bias")
    if bias.dtype != np.int32:
        raise Unsupported(f"bias of type {bias.dtype} (int32 expected)")
    scales = np.multiply.outer(types[0].scale_values(), types[1].scale_values()).reshape(-1)
    bq = make_qtype(scales, None, "i32", 0, max(bias.ndim, 1))
    name = f"{ctx.node.output[0]}\x00bias"
    ctx.importer.values[name] = dequantize_const(bias, bq)
    if st.keep:
        st.const_q[name] = (bias, bq)
    return name
