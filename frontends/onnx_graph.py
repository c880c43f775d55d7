"""Walking an ONNX graph into `nn` ops: tensor values, known constants, dispatch and diagnostics.

Every ONNX tensor name maps to a `Value`: an `SSAValue` computed at run time,
or a numpy array whose value is known at import time (initializers, shape
arithmetic, folded constants). Constants become `nn.constant` ops only where
a run-time op consumes them.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float32Type,
    IntegerType,
    Signedness,
    TensorType,
    f32,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from npuc import plugin_registry
from npuc.diagnostics import NpucError, issues_report
from npuc.dialects.nn import ConstantOp, NNOperation, ReshapeOp, TransposeOp, build, ints
from npuc.dialects.nn_shapes import Shape
from npuc.limits import check_tensor
from npuc.plugins import missing_plugins_report
from npuc.tensors import numpy_dtype, to_dense, xdsl_type

from .onnx_opsets import arity_issue, version_issue

Value = SSAValue | np.ndarray
Converter = Callable[["NodeContext"], Sequence["Value | None"]]
ValueInfo = Callable[[str], "tuple[tuple[int | None, ...], np.dtype] | None"]


class Unsupported(Exception):
    """A node npuc cannot convert; `reason` is shown to the user.

    `from_inputs` marks reasons that depend on input values (e.g. a shape that
    is not a constant), which are not reported downstream of another failure.
    """

    def __init__(self, reason: str, *, from_inputs: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.from_inputs = from_inputs


@dataclass
class Issue:
    op_type: str
    node: str
    reason: str
    invalid: bool = False
    needs_plugin: bool = False  # op_type is "domain::OpType", which no plugin provides


def plugin_converter(domain: str, op_type: str) -> Converter | None:
    """A plugin's converter for an op npuc's tables lack; its faults name the plugin."""
    found = plugin_registry.onnx_converter(domain, op_type)
    if found is None:
        return None
    loaded, convert = found
    what = f"the converter of ONNX op '{domain or 'ai.onnx'}::{op_type}'"
    return plugin_registry.guarded(loaded, convert, what, (Unsupported,))


def is_splat(array: np.ndarray) -> bool:
    """A broadcast view of one value (e.g. ConstantOfShape), stored as a splat."""
    return array.size > 1 and all(s == 0 for s in array.strides)


def as_dtype(array: np.ndarray, dtype: np.dtype | type) -> np.ndarray:
    """`array` converted to `dtype`, keeping splat views cheap."""
    if array.dtype == dtype:
        return array
    if is_splat(array):
        return np.broadcast_to(array.reshape(-1)[:1].astype(dtype).reshape(()), array.shape)
    return array.astype(dtype)


def dense(array: np.ndarray, element_type: Attribute) -> DenseIntOrFPElementsAttr:
    if is_splat(array):
        one = to_dense(array.reshape(-1)[:1], element_type)
        return DenseIntOrFPElementsAttr(TensorType(element_type, array.shape), one.data)
    return to_dense(array, element_type)


def splat_zero(ty: TensorType) -> DenseIntOrFPElementsAttr:
    width = numpy_dtype(ty.element_type).itemsize
    return DenseIntOrFPElementsAttr(ty, BytesAttr(bytes(width)))


def attribute_value(attr: onnx.AttributeProto) -> Any:
    """A Python value for an ONNX attribute (str for strings; tensors stay TensorProto)."""
    kind = attr.type
    if kind == onnx.AttributeProto.FLOAT:
        return attr.f
    if kind == onnx.AttributeProto.INT:
        return attr.i
    if kind == onnx.AttributeProto.STRING:
        return attr.s.decode("utf-8", "replace")
    if kind == onnx.AttributeProto.FLOATS:
        return list(attr.floats)
    if kind == onnx.AttributeProto.INTS:
        return list(attr.ints)
    if kind == onnx.AttributeProto.STRINGS:
        return [s.decode("utf-8", "replace") for s in attr.strings]
    if kind == onnx.AttributeProto.TENSOR:
        return attr.t
    return attr


class NodeContext:
    """What a converter sees of one ONNX node: inputs, attributes, and an op emitter."""

    def __init__(self, importer: GraphImporter, node: onnx.NodeProto, name: str):
        self.node = node
        self.name = name
        self.opset = importer.opset
        self.importer = importer
        self.attrs = {a.name: attribute_value(a) for a in node.attribute}
        if len(self.attrs) != len(node.attribute):
            seen = [a.name for a in node.attribute]
            repeated = sorted({n for n in seen if seen.count(n) > 1})
            raise ValueError(f"attribute '{repeated[0]}' is given more than once")

    @property
    def op_type(self) -> str:
        return self.node.op_type

    def attr(self, key: str, default: Any = None) -> Any:
        value = self.attrs.get(key, default)
        if isinstance(value, onnx.TensorProto):
            return self.importer.tensor_array(value)
        return value

    # ------------------------------------------------------------------ inputs

    @property
    def num_inputs(self) -> int:
        return len(self.node.input)

    def has(self, i: int) -> bool:
        return i < len(self.node.input) and bool(self.node.input[i])

    def input(self, i: int) -> Value:
        if not self.has(i):
            raise ValueError(f"input {i} is required")
        return self.importer.lookup(self.node.input[i])

    def const(self, i: int) -> np.ndarray | None:
        if not self.has(i):
            return None
        value = self.input(i)
        return value if isinstance(value, np.ndarray) else None

    def need_const(self, i: int, what: str) -> np.ndarray:
        value = self.const(i)
        if value is None:
            raise Unsupported(f"non-constant {what}", from_inputs=True)
        return value

    def ints(self, i: int, what: str) -> list[int]:
        return [int(v) for v in self.need_const(i, what).reshape(-1)]

    def shape(self, i: int) -> Shape:
        value = self.input(i)
        return tuple(value.shape) if isinstance(value, np.ndarray) else shape_of(value)

    def rank(self, i: int) -> int:
        return len(self.shape(i))

    def operand(self, i: int) -> SSAValue:
        """Input i as an f32 run-time value (constants become `nn.constant`)."""
        return self.importer.f32_value(self.node.input[i], self.name)

    def value(self, i: int, element: Attribute | None = None) -> SSAValue:
        """Input i as a run-time value of its own element type (f32, integer or i1).

        A constant becomes an `nn.constant` of `element` if given, else of its dtype
        (floats as f32); a run-time value must already have `element`.
        """
        return self.importer.typed_value(self.node.input[i], self.name, element)

    def values(self, indices: Sequence[int]) -> tuple[list[SSAValue], Attribute]:
        """Inputs as run-time values of one element type, and that type.

        f32 unless a run-time input is an integer or i1 tensor, whose type the
        others (ONNX gives them one type) then take.
        """
        inputs = [self.input(i) for i in indices]
        runtime = [element_of(v) for v in inputs if not isinstance(v, np.ndarray)]
        if all(isinstance(e, Float32Type) for e in runtime):
            return [self.operand(i) for i in indices], f32
        element = next(e for e in runtime if not isinstance(e, Float32Type))
        if any(e != element for e in runtime):
            shown = ", ".join(element_text(e) for e in runtime)
            raise Unsupported(f"inputs of different element types ({shown})")
        return [self.value(i, element) for i in indices], element

    def output_used(self, i: int) -> bool:
        outs = self.node.output
        return i < len(outs) and bool(outs[i]) and outs[i] in self.importer.used

    # ------------------------------------------------------------------ emitting

    def emit_op(
        self,
        op_type: type[NNOperation],
        operands: Sequence[SSAValue | None],
        props: Mapping[str, Attribute] | None = None,
        *,
        result_types: Sequence[Attribute] | None = None,
        element_type: Attribute = f32,
    ) -> Operation:
        op = build(
            op_type,
            operands,
            props,
            name=self.name,
            result_types=result_types,
            element_type=element_type,
        )
        self.importer.block.add_op(op)
        return op

    def emit(
        self,
        op_type: type[NNOperation],
        operands: Sequence[SSAValue | None],
        props: Mapping[str, Attribute] | None = None,
        **kwargs: Any,
    ) -> SSAValue:
        return self.emit_op(op_type, operands, props, **kwargs).results[0]

    def constant(self, array: np.ndarray, element_type: Attribute = f32) -> SSAValue:
        return self.importer.add_constant(array, self.name, element_type)

    def reshape(self, value: SSAValue, shape: Sequence[int]) -> SSAValue:
        shape = tuple(int(d) for d in shape)
        if shape_of(value) == shape:
            return value
        return self.emit(ReshapeOp, [value], result_types=[TensorType(element_of(value), shape)])

    def transpose(self, value: SSAValue, perm: Sequence[int]) -> SSAValue:
        if list(perm) == list(range(len(perm))):
            return value
        return self.emit(TransposeOp, [value], {"perm": ints(perm)}, element_type=element_of(value))


def shape_of(value: SSAValue) -> Shape:
    ty = value.type
    assert isinstance(ty, TensorType)
    return tuple(ty.get_shape())


def element_of(value: SSAValue) -> Attribute:
    ty = value.type
    assert isinstance(ty, TensorType)
    return ty.element_type


def element_text(element: Attribute) -> str:
    if isinstance(element, IntegerType):
        unsigned = element.signedness.data == Signedness.UNSIGNED
        return f"{'u' if unsigned else ''}i{element.width.data}"
    return str(element)


def element_for(dtype: np.dtype) -> Attribute:
    """The `nn` element type holding a numpy dtype: floats as f32, integers and bool as such."""
    if dtype.kind == "f":
        return f32
    try:
        return xdsl_type(dtype)
    except TypeError:
        raise Unsupported(f"element type {dtype} not supported") from None


def is_f32(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType) and isinstance(value.type.element_type, Float32Type)


class GraphImporter:
    """Converts scheduled ONNX nodes into `nn` ops appended to `block`."""

    def __init__(
        self,
        *,
        opset: int,
        block: Block,
        initializers: Mapping[str, onnx.TensorProto],
        converters: Mapping[str, Converter],
        folders: Mapping[str, Converter],
        used: set[str],
        base_dir: str | None,
        location: str | None,
        value_info: ValueInfo | None = None,
    ):
        self.opset = opset
        self.block = block
        self.initializers = initializers
        self.converters = converters
        self.folders = folders
        self.used = used
        self.base_dir = base_dir
        self.location = location
        self.value_info = value_info
        self.values: dict[str, Value] = {}
        self.const_names: dict[str, str] = {}
        self.issues: list[Issue] = []
        self._materialized: dict[tuple[str, str], SSAValue] = {}
        self._poisoned: set[str] = set()
        self._tainted: set[str] = set()

    # ------------------------------------------------------------------ values

    def tensor_array(self, tensor: onnx.TensorProto) -> np.ndarray:
        dims = list(tensor.dims)
        if any(d < 0 for d in dims):
            raise NpucError(
                f"tensor '{tensor.name}' has a negative dimension ({dims})", self.location
            )
        dtype = _elem_dtype(tensor.data_type)
        check_tensor(
            dims,
            dtype.itemsize if dtype is not None else 1,
            f"tensor '{tensor.name}'",
            self.location,
        )
        external = tensor.data_location == onnx.TensorProto.EXTERNAL
        if external and self.base_dir is None:
            raise NpucError(
                f"tensor '{tensor.name}' keeps its data in an external file, but the model "
                "was given without a location to resolve it from",
                self.location,
            )
        try:
            return numpy_helper.to_array(tensor, self.base_dir or "")
        except (OSError, ValueError, TypeError, onnx.checker.ValidationError) as e:
            what = "external data of" if external else "data of"
            raise NpucError(
                f"cannot read the {what} tensor '{tensor.name}': {e}", self.location
            ) from e

    def lookup(self, name: str) -> Value:
        value = self.values.get(name)
        if value is None:
            tensor = self.initializers.get(name)
            if tensor is None:
                raise NpucError(f"tensor '{name}' is used before it is defined", self.location)
            value = self.tensor_array(tensor)
            self.values[name] = value
            self.const_names[name] = name
        return value

    def add_constant(self, array: np.ndarray, name: str, element_type: Attribute = f32) -> SSAValue:
        if isinstance(element_type, Float32Type):
            array = as_dtype(array, np.float32)
        else:
            array = as_dtype(array, numpy_dtype(element_type))
        op = ConstantOp(dense(array, element_type), name)
        self.block.add_op(op)
        return op.output

    def f32_value(self, tensor: str, user: str) -> SSAValue:
        value = self.lookup(tensor)
        if isinstance(value, np.ndarray):
            key = (tensor, "f32")
            if key not in self._materialized:
                if value.dtype.kind not in "fiub":
                    raise Unsupported(f"tensor '{tensor}' of type {value.dtype} as an operand")
                self._materialized[key] = self.add_constant(
                    value, self.const_names.get(tensor, user), f32
                )
            return self._materialized[key]
        if not is_f32(value):
            raise Unsupported(f"run-time input '{tensor}' has element type {_type_text(value)}")
        return value

    def typed_value(self, tensor: str, user: str, element: Attribute | None = None) -> SSAValue:
        """`tensor` as a run-time value of `element` (default: its own type, floats as f32)."""
        value = self.lookup(tensor)
        if not isinstance(value, np.ndarray):
            if element is not None and element_of(value) != element:
                raise Unsupported(
                    f"run-time input '{tensor}' has element type {_type_text(value)}, "
                    f"expected {element_text(element)}"
                )
            return value
        if element is None:
            element = element_for(value.dtype)
        if isinstance(element, Float32Type):
            return self.f32_value(tensor, user)
        key = (tensor, str(element))
        if key not in self._materialized:
            if value.dtype.kind not in "iub":
                raise Unsupported(f"tensor '{tensor}' of type {value.dtype} as an integer operand")
            self._materialized[key] = self.add_constant(
                value, self.const_names.get(tensor, user), element
            )
        return self._materialized[key]

    def result(self, tensor: str) -> SSAValue:
        """A graph output: run-time values as they are, constants as `nn.constant` of their
        type (floats as f32)."""
        value = self.lookup(tensor)
        if not isinstance(value, np.ndarray):
            return value
        if value.dtype.kind == "f":
            return self.f32_value(tensor, tensor)
        try:
            element = xdsl_type(value.dtype)
        except TypeError:
            raise NpucError(
                f"output '{tensor}' is a constant of type {value.dtype}; npuc outputs are "
                "float32, integer or bool tensors",
                self.location,
            ) from None
        return self.add_constant(value, self.const_names.get(tensor, tensor), element)

    # ------------------------------------------------------------------ conversion

    def run(self, nodes: Iterable[tuple[int, onnx.NodeProto]]) -> None:
        for index, node in nodes:
            self.convert_node(node, node.name or f"{node.op_type}_{index}")

    def convert_node(self, node: onnx.NodeProto, name: str) -> None:
        op_type = node.op_type
        # Converters of other domains register as "domain:OpType" (e.g. com.microsoft ops).
        key = op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{op_type}"
        convert = self.converters.get(key)
        fold = self.folders.get(key)
        from_plugin = False
        if convert is None and fold is None:
            convert = plugin_converter(node.domain, op_type)
            if convert is None:
                if key != op_type:
                    self._issue(Issue(f"{node.domain}::{op_type}", name, "", needs_plugin=True))
                else:
                    self._issue(Issue(op_type, name, "op not supported"))
                self._fail(node)
                return
            from_plugin = True
        too_new = version_issue(op_type, self.opset) if key == op_type and not from_plugin else None
        if too_new is not None:
            self._issue(Issue(op_type, name, too_new))
            self._fail(node)
            return
        if key == op_type and not from_plugin:
            wrong = arity_issue(op_type, self.opset, len(node.input), len(node.output))
            if wrong is not None:
                self._issue(Issue(op_type, name, f"invalid node: {wrong}", invalid=True))
                self._fail(node)
                return
        present = [t for t in node.input if t]
        if any(t in self._poisoned for t in present):
            self._poison(node)
            return
        tainted = any(t in self._tainted for t in present)
        try:
            ctx = NodeContext(self, node, name)
            results = None
            if fold is not None and all(isinstance(self.lookup(t), np.ndarray) for t in present):
                results = fold(ctx)
            if results is None:
                if convert is None:
                    raise Unsupported("needs constant inputs", from_inputs=True)
                results = convert(ctx)
            self._bind(node, name, results)
        except NpucError:
            raise
        except Unsupported as e:
            if not (tainted and e.from_inputs):
                self._issue(Issue(op_type, name, e.reason))
            self._fail(node)
        except Exception as e:  # a malformed node must become a diagnostic, not a traceback
            if not tainted:
                self._issue(Issue(op_type, name, _exception_text(e), invalid=True))
            self._fail(node)

    def _bind(self, node: onnx.NodeProto, name: str, results: Sequence[Value | None]) -> None:
        for i, out in enumerate(node.output):
            if not out:
                continue
            value = results[i] if i < len(results) else None
            if isinstance(value, np.generic):
                value = np.asarray(value)
            if value is not None:
                self.values[out] = value
                if isinstance(value, np.ndarray):
                    self.const_names.setdefault(out, name)
            elif out in self.used:
                raise Unsupported(f"output {i} ('{out}') not supported")

    def _issue(self, issue: Issue) -> None:
        self.issues.append(issue)

    def _poison(self, node: onnx.NodeProto) -> None:
        self._poisoned.update(t for t in node.output if t)

    def _fail(self, node: onnx.NodeProto) -> None:
        """Give a failed node's outputs placeholder values so later nodes can still be checked."""
        for out in node.output:
            if not out:
                continue
            info = self.value_info(out) if self.value_info is not None else None
            shape, dtype = info if info is not None else (None, None)
            if shape is None or any(d is None for d in shape):
                self._poisoned.add(out)
                continue
            try:
                element = f32 if dtype.kind == "f" else xdsl_type(dtype)
            except TypeError:
                self._poisoned.add(out)
                continue
            placeholder = ConstantOp(splat_zero(TensorType(element, shape)))
            self.values[out] = placeholder.output
            self._tainted.add(out)


def _elem_dtype(elem_type: int) -> np.dtype | None:
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError, ValueError):
        return None


def _type_text(value: SSAValue) -> str:
    ty = value.type
    return element_text(ty.element_type) if isinstance(ty, TensorType) else str(ty)


def _exception_text(e: Exception) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return f"invalid node: {text}"


def issues_error(issues: Sequence[Issue], location: str | None) -> NpucError:
    """One diagnostic: the ops that need a plugin, then every unsupported or invalid node,
    grouped by op type and reason."""
    needed = list(dict.fromkeys(i.op_type for i in issues if i.needs_plugin))
    installed = plugin_registry.plugin_names() if needed else []
    issues = [i for i in issues if not i.needs_plugin]
    groups = []
    for invalid, title in ((False, "unsupported ONNX constructs"), (True, "invalid ONNX nodes")):
        group = [(i.op_type, i.node, i.reason) for i in issues if i.invalid == invalid]
        groups.append((f"{title} ({len(group)} node{'s' * (len(group) != 1)})", group))
    return NpucError(missing_plugins_report(needed, installed, issues_report(groups)), location)


def schedule(
    graph: onnx.GraphProto,
    targets: Sequence[str],
    available: set[str],
    graph_inputs: set[str],
    location: str | None,
) -> list[tuple[int, onnx.NodeProto]]:
    """The nodes needed to compute `targets` from `available` tensors, in topological order."""
    producer: dict[str, int] = {}
    for i, node in enumerate(graph.node):
        for out in node.output:
            if out:
                producer.setdefault(out, i)
    needed: set[int] = set()
    stack = [(t, None) for t in reversed(targets)]
    while stack:
        tensor, user = stack.pop()
        if tensor in available:
            continue
        index = producer.get(tensor)
        if index is None:
            if tensor in graph_inputs:
                raise NpucError(
                    f"the chosen outputs depend on graph input '{tensor}', which is not among "
                    "the chosen inputs",
                    location,
                )
            reader = f"node '{user}'" if user else "the graph outputs"
            raise NpucError(
                f"invalid ONNX graph: {reader} reads tensor '{tensor}', which no node, "
                "initializer or graph input provides",
                location,
            )
        if index in needed:
            continue
        needed.add(index)
        node = graph.node[index]
        name = node.name or f"{node.op_type}_{index}"
        stack.extend((t, name) for t in node.input if t and t not in available)

    waiting: dict[int, int] = {}
    users: dict[int, list[int]] = {}
    for index in needed:
        deps = {producer[t] for t in graph.node[index].input if t and t not in available}
        waiting[index] = len(deps)
        for d in deps:
            users.setdefault(d, []).append(index)
    ready = [i for i, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    order: list[tuple[int, onnx.NodeProto]] = []
    while ready:
        index = heapq.heappop(ready)
        order.append((index, graph.node[index]))
        for user in users.get(index, ()):
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, user)
    if len(order) != len(needed):
        raise NpucError("invalid ONNX graph: its nodes form a cycle", location)
    return order
