"""ONNX importer: an ONNX model (opsets 7-21) becomes a `func.func @main` of `nn` ops.

Older models are first upgraded to opset 7 with onnx.version_converter. Newer
models are read node by node: an op whose version is newer than opset 21 is
reported unsupported unless it keeps its opset-21 meaning (see onnx_opsets).

Shape sub-graphs (Shape, Gather, Concat, ... on constants) are evaluated at
import time, so the result is statically shaped. Unsupported nodes are
collected and reported together in one diagnostic.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import numpy_helper, version_converter
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Region
from xdsl.utils.exceptions import VerifyException

from npuc.diagnostics import NpucError, continuation
from npuc.graph_io import ENTRY, name_attrs
from npuc.limits import check_tensor
from npuc.locations import name_locations
from npuc.tensors import numpy_dtype, xdsl_type

from . import (
    onnx_elementwise,
    onnx_layers,
    onnx_quantized,
    onnx_recurrent,
    onnx_resize,
    onnx_tensor_ops,
)
from .onnx_fold import FOLDERS
from .onnx_graph import Converter, GraphImporter, issues_error, schedule, shape_of
from .onnx_opsets import MAX_OPSET, MIN_OPSET, newest_opset

CONVERTERS: dict[str, Converter] = {
    **onnx_elementwise.CONVERTERS,
    **onnx_layers.CONVERTERS,
    **onnx_tensor_ops.CONVERTERS,
    **onnx_resize.CONVERTERS,
    **onnx_recurrent.CONVERTERS,
}

__all__ = ["import_onnx", "parse_input_shape", "supported_ops"]

ModelSource = str | os.PathLike | bytes | bytearray | memoryview | onnx.ModelProto


def supported_ops() -> list[str]:
    """ONNX op types the importer understands (some only on constant inputs)."""
    return sorted(set(CONVERTERS) | set(FOLDERS) | onnx_quantized.DEFAULT_DOMAIN_OPS)


def parse_input_shape(spec: str) -> tuple[str, list[int]]:
    """`name:1,3,224,224` -> ("name", [1, 3, 224, 224]); the name may itself contain ':'."""
    name, sep, dims = spec.rpartition(":")
    usage = f"bad input shape '{spec}': expected NAME:D1,D2,... with positive integer dimensions"
    if not sep or not name or not dims.strip():
        raise NpucError(usage)
    try:
        shape = [int(d) for d in dims.replace("x", ",").split(",")]
    except ValueError:
        raise NpucError(usage) from None
    if any(d <= 0 for d in shape):
        raise NpucError(usage)
    return name, shape


def import_onnx(
    model: ModelSource,
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    inputs: Sequence[str] | None = None,
    outputs: Sequence[str] | None = None,
    location: str | None = None,
    constants: Mapping[str, np.ndarray] | None = None,
    prequantized: str = "keep",
) -> ModuleOp:
    """Import an ONNX model (path, bytes or ModelProto) as a module of `nn` ops.

    `input_shapes` fixes input shapes (dynamic dimensions); `inputs`/`outputs`
    cut a sub-graph by tensor names. `constants` freezes graph inputs to given
    values (e.g. shape parameters), so they fold like initializers. `location`
    names the model in diagnostics and anchors external data when the model is
    given as bytes or a proto. `prequantized` says what happens to a quantized
    model (QDQ or QLinear ops): "keep" imports it into `qnn` with its own
    parameters, "dequantize" yields the float model (see onnx_quantized).
    """
    proto, location, base_dir = _load(model, location)
    if constants:
        proto = _freeze_inputs(proto, constants, location)
    opset = _default_opset(proto, location)
    if opset < MIN_OPSET:
        proto, opset = _upgrade(proto, opset, location), MIN_OPSET
    importer = _Import(proto, opset, location, base_dir)
    if prequantized not in onnx_quantized.MODES or onnx_quantized.is_quantized(proto.graph):
        cut = list(outputs) if outputs is not None else [vi.name for vi in proto.graph.output]
        importer.converters = onnx_quantized.converters(CONVERTERS, proto.graph, prequantized, cut)
        return onnx_quantized.finish(importer.run(input_shapes, inputs, outputs))
    return importer.run(input_shapes, inputs, outputs)


# ---------------------------------------------------------------------------- loading


def _freeze_inputs(
    proto: onnx.ModelProto, constants: Mapping[str, np.ndarray], location: str
) -> onnx.ModelProto:
    """A copy of the model whose named graph inputs are initializers holding the given values."""
    graph_inputs = [i.name for i in proto.graph.input]
    unknown = sorted(set(constants) - set(graph_inputs))
    if unknown:
        raise NpucError(
            f"cannot freeze {', '.join(unknown)}: not graph inputs "
            f"(inputs are: {', '.join(graph_inputs)})",
            location,
        )
    frozen = onnx.ModelProto()
    frozen.CopyFrom(proto)
    # Before IR version 4 every initializer must also be a graph input (the
    # version converter rejects it otherwise); the importer reads both as a constant.
    if proto.ir_version >= 4:
        kept = [i for i in frozen.graph.input if i.name not in constants]
        del frozen.graph.input[:]
        frozen.graph.input.extend(kept)
    stale = [t for t in frozen.graph.initializer if t.name in constants]
    for tensor in stale:
        frozen.graph.initializer.remove(tensor)
    for name, value in constants.items():
        frozen.graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
    return frozen


def _load(model: ModelSource, location: str | None) -> tuple[onnx.ModelProto, str, str | None]:
    if isinstance(model, onnx.ModelProto):
        base = os.path.dirname(os.path.abspath(location)) if location else None
        proto, location = model, location or "<onnx model>"
    elif isinstance(model, bytes | bytearray | memoryview):
        base = os.path.dirname(os.path.abspath(location)) if location else None
        location = location or "<onnx bytes>"
        proto = _parse(bytes(model), location)
    else:
        path = os.fspath(model)
        location = location or path
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise NpucError(f"cannot read ONNX model: {e.strerror or e}", location) from None
        base = os.path.dirname(os.path.abspath(path))
        proto = _parse(data, location)
    _check_proto(proto, location)
    return proto, location, base


def _parse(data: bytes, location: str) -> onnx.ModelProto:
    if not data:
        raise NpucError("not an ONNX model: the file is empty", location)
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise NpucError(
            f"not an ONNX model (corrupt or truncated protobuf: {e})", location
        ) from None
    return proto


def _check_proto(proto: onnx.ModelProto, location: str) -> None:
    if not proto.HasField("graph") or proto.ir_version <= 0:
        raise NpucError("not an ONNX model (no graph or IR version)", location)
    if not proto.graph.output:
        raise NpucError("invalid ONNX model: the graph has no outputs", location)
    field = _non_utf8_field(proto)
    if field is not None:
        raise NpucError(f"invalid ONNX model: {field} is not UTF-8 text", location)


def _non_utf8_field(message, path: str = "") -> str | None:
    """The first string field that holds bytes that are not UTF-8 (protobuf hands such a
    proto2 string over as bytes), as a path like graph.node[3].input[1]; None if none."""
    for fd, value in message.ListFields():
        repeated = _is_repeated(fd)
        items = list(value) if repeated else [value]
        if fd.type == fd.TYPE_STRING:
            for i, item in enumerate(items):
                if isinstance(item, bytes):
                    return f"{path}{fd.name}" + (f"[{i}]" if repeated else "")
        elif fd.type == fd.TYPE_MESSAGE:
            for i, item in enumerate(items):
                inner = f"{path}{fd.name}" + (f"[{i}]" if repeated else "") + "."
                found = _non_utf8_field(item, inner)
                if found is not None:
                    return found
    return None


def _is_repeated(fd) -> bool:
    if hasattr(fd, "is_repeated"):  # protobuf >= 6
        return bool(fd.is_repeated)
    return fd.label == fd.LABEL_REPEATED


def _default_opset(proto: onnx.ModelProto, location: str) -> int:
    versions = [o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")]
    if not versions:
        if proto.ir_version < 3:
            raise NpucError(
                "ONNX IR version < 3 is not supported (opset 7 or newer needed)", location
            )
        raise NpucError("invalid ONNX model: it imports no default-domain opset", location)
    version = versions[0]
    if version < 1:  # onnx's versions start at 1; its converter would fail an assertion
        raise NpucError(
            f"invalid ONNX model: it imports opset {version} of the default domain (opset "
            f"versions start at 1; npuc supports opsets {MIN_OPSET}-{MAX_OPSET})",
            location,
        )
    if version > newest_opset():
        raise NpucError(
            f"opset {version} is newer than the installed onnx package knows "
            f"(opset <= {newest_opset()}); npuc supports opsets {MIN_OPSET}-{MAX_OPSET}",
            location,
        )
    return version


def _upgrade(proto: onnx.ModelProto, opset: int, location: str) -> onnx.ModelProto:
    """Models older than opset 7 (legacy broadcast attributes) go through onnx's converter."""
    try:
        return version_converter.convert_version(proto, MIN_OPSET)
    except Exception as e:  # the converter raises plain RuntimeErrors and C++ errors
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise NpucError(
            f"opset {opset} is older than the supported opsets {MIN_OPSET}-{MAX_OPSET}, and "
            f"onnx.version_converter could not upgrade it: {first}",
            location,
        ) from None


# ---------------------------------------------------------------------------- shapes


def _tensor_type(vi: onnx.ValueInfoProto) -> tuple[list[int | None], int] | None:
    """(dims with None for unknown, elem_type) of a tensor value info, or None if untyped."""
    if not vi.type.HasField("tensor_type"):
        return None
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return None
    dims = [
        d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else None for d in tt.shape.dim
    ]
    return dims, tt.elem_type


def _dtype(elem_type: int) -> np.dtype | None:
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError, ValueError):
        return None


def _type_name(elem_type: int) -> str:
    try:
        return onnx.TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return f"type {elem_type}"


class _ShapeOracle:
    """ONNX shape inference on a data-free copy of the model, run on first use."""

    def __init__(self, proto: onnx.ModelProto, fixed: Mapping[str, Sequence[int]]):
        self._proto = proto
        self._fixed = fixed
        self._info: dict[str, tuple[tuple[int | None, ...], np.dtype | None]] | None = None

    def __call__(self, name: str) -> tuple[tuple[int | None, ...], np.dtype] | None:
        if self._info is None:
            self._info = self._infer()
        found = self._info.get(name)
        if found is None or found[1] is None:
            return None
        return found  # type: ignore[return-value]

    def _infer(self) -> dict[str, tuple[tuple[int | None, ...], np.dtype | None]]:
        src = self._proto
        light = onnx.ModelProto()
        light.ir_version = src.ir_version
        light.opset_import.extend(src.opset_import)
        graph = light.graph
        graph.node.extend(src.graph.node)
        graph.output.extend(src.graph.output)
        graph.value_info.extend(src.graph.value_info)
        initialized = set()
        for t in src.graph.initializer:
            initialized.add(t.name)
            if t.data_type == onnx.TensorProto.INT64 and np.prod(t.dims) <= 64:
                graph.initializer.append(t)
            else:
                graph.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, t.dims))
        for vi in src.graph.input:
            if vi.name in initialized:
                continue
            if vi.name in self._fixed and vi.type.HasField("tensor_type"):
                elem = vi.type.tensor_type.elem_type
                vi = onnx.helper.make_tensor_value_info(vi.name, elem, list(self._fixed[vi.name]))
            graph.input.append(vi)
        try:
            inferred = onnx.shape_inference.infer_shapes(light, strict_mode=False, data_prop=True)
        except Exception:  # shape inference is a best-effort aid
            return {}
        info = {}
        for vi in [*inferred.graph.value_info, *inferred.graph.output, *inferred.graph.input]:
            typed = _tensor_type(vi)
            if typed is not None:
                info[vi.name] = (tuple(typed[0]), _dtype(typed[1]))
        return info


# ---------------------------------------------------------------------------- import


class _Import:
    def __init__(self, proto: onnx.ModelProto, opset: int, location: str, base_dir: str | None):
        self.proto = proto
        self.graph = proto.graph
        self.opset = opset
        self.location = location
        self.base_dir = base_dir
        self.converters: Mapping[str, Converter] = CONVERTERS
        self.initializers = {t.name: t for t in self.graph.initializer}
        self.graph_inputs = {
            vi.name: vi for vi in self.graph.input if vi.name not in self.initializers
        }
        self.node_outputs = [o for node in self.graph.node for o in node.output if o]

    def error(self, message: str) -> NpucError:
        return NpucError(message, self.location)

    def run(
        self,
        input_shapes: Mapping[str, Sequence[int]] | None,
        inputs: Sequence[str] | None,
        outputs: Sequence[str] | None,
    ) -> ModuleOp:
        in_names = list(inputs) if inputs is not None else list(self.graph_inputs)
        out_names = list(outputs) if outputs is not None else [vi.name for vi in self.graph.output]
        self._check_names(in_names, out_names, inputs is not None, outputs is not None)
        overrides = self._overrides(input_shapes or {}, in_names)
        fixed = {}
        for name in self.graph_inputs:
            shape = self._graph_input_shape(name, overrides, strict=False)
            if shape is not None:
                fixed[name] = shape
        oracle = _ShapeOracle(self.proto, fixed)
        arg_shapes = [self._argument_shape(n, overrides, fixed, oracle) for n in in_names]
        elements = [self._argument_element(n, oracle) for n in in_names]
        for name, shape, element in zip(in_names, arg_shapes, elements, strict=True):
            check_tensor(shape, numpy_dtype(element).itemsize, f"input '{name}'", self.location)

        block = Block(
            arg_types=[TensorType(e, s) for e, s in zip(elements, arg_shapes, strict=True)]
        )
        available = set(in_names) | set(self.initializers)
        nodes = schedule(self.graph, out_names, available, set(self.graph_inputs), self.location)
        used = {t for _, node in nodes for t in node.input if t} | set(out_names)
        importer = self._importer(block, used, oracle)
        importer.values.update(zip(in_names, block.args, strict=True))
        importer.run(nodes)
        if importer.issues:
            raise issues_error(importer.issues, self.location)
        results = [importer.result(name) for name in out_names]
        block.add_op(ReturnOp(*results))
        func = FuncOp(
            ENTRY,
            ([a.type for a in block.args], [r.type for r in results]),
            Region(block),
            arg_attrs=name_attrs(in_names),
            res_attrs=name_attrs(out_names),
        )
        module = ModuleOp([func])
        try:
            module.verify()
        except VerifyException as e:
            raise self.error(f"the imported module does not verify (an importer bug): {e}") from e
        name_locations(module)  # loc("LAYER") from the model's own names
        return module

    def _importer(self, block: Block, used: set[str], oracle: _ShapeOracle) -> GraphImporter:
        return GraphImporter(
            opset=self.opset,
            block=block,
            initializers=self.initializers,
            converters=self.converters,
            folders=FOLDERS,
            used=used,
            base_dir=self.base_dir,
            location=self.location,
            value_info=oracle,
        )

    # ------------------------------------------------------------------ names and shapes

    def _check_names(
        self, in_names: list[str], out_names: list[str], cut_in: bool, cut_out: bool
    ) -> None:
        known = [*self.graph_inputs, *self.initializers, *self.node_outputs]
        known_set = set(known)
        for kind, names, cut in (("input", in_names, cut_in), ("output", out_names, cut_out)):
            if cut and not names:
                raise self.error(f"the list of {kind}s to cut at is empty")
            unknown = [n for n in names if n not in known_set]
            if unknown:
                raise self.error(self._unknown_names(kind, unknown, known))
            if len(set(names)) != len(names):
                raise self.error(f"{kind} names are repeated: {names}")

    def _unknown_names(self, kind: str, unknown: list[str], known: list[str]) -> str:
        first = f"unknown {kind} tensor name{'s' if len(unknown) > 1 else ''}: "
        first += ", ".join(unknown)
        notes = []
        close = sorted({m for n in unknown for m in difflib.get_close_matches(n, known, 3, 0.6)})
        if close:
            notes.append(f"did you mean: {', '.join(close)}?")
        shown = known[:40]
        more = f" ... ({len(known) - 40} more)" if len(known) > 40 else ""
        notes.append(f"valid tensor names: {', '.join(shown)}{more}")
        return first + continuation(*notes)

    def _overrides(
        self, input_shapes: Mapping[str, Sequence[int]], in_names: list[str]
    ) -> dict[str, list[int]]:
        valid = list(dict.fromkeys([*in_names, *self.graph_inputs]))
        result = {}
        for name, shape in input_shapes.items():
            if name not in valid:
                raise self.error(
                    f"--input-shape names unknown input '{name}'; inputs are: {', '.join(valid)}"
                )
            dims = [int(d) for d in shape]
            if any(d <= 0 for d in dims):
                raise self.error(f"input shape {dims} for '{name}' must have positive dimensions")
            check_tensor(dims, 1, f"input '{name}' (--input-shape)", self.location)
            declared = self._declared(name)
            if declared is not None and len(declared[0]) != len(dims):
                raise self.error(
                    f"input shape {dims} for '{name}' has rank {len(dims)}, but the model "
                    f"declares rank {len(declared[0])} ({_dims_text(declared[0])})"
                )
            if declared is not None and any(
                d is not None and d != want for d, want in zip(declared[0], dims, strict=True)
            ):
                # As onnxruntime refuses such an input: only dynamic dimensions are free.
                raise self.error(
                    f"--input-shape {name}:{','.join(map(str, dims))} contradicts the model's "
                    f"shape {_dims_text(declared[0])} for input '{name}' (only its dynamic "
                    "dimensions, shown as ?, may be given a size)"
                )
            result[name] = dims
        return result

    def _declared(self, name: str) -> tuple[list[int | None], int] | None:
        vi = self.graph_inputs.get(name)
        if vi is None:
            vi = next((v for v in self.graph.value_info if v.name == name), None)
        if vi is None:
            tensor = self.initializers.get(name)
            return (list(tensor.dims), tensor.data_type) if tensor is not None else None
        return _tensor_type(vi)

    def _graph_input_shape(
        self, name: str, overrides: Mapping[str, list[int]], strict: bool
    ) -> list[int] | None:
        if name in overrides:
            return list(overrides[name])
        declared = self._declared(name)
        if declared is None:
            vi = self.graph_inputs.get(name)
            kind = vi.type.WhichOneof("value") if vi is not None else None
            if strict and kind not in (None, "tensor_type"):
                raise self.error(
                    f"graph input '{name}' is not a tensor (its type is "
                    f"{kind.removesuffix('_type')}); npuc takes tensor inputs"
                )
            if strict:
                raise self.error(
                    f"graph input '{name}' has no tensor shape; give one with --input-shape"
                )
            return None
        dims = list(declared[0])
        if 0 in dims:
            if not strict:
                return None
            raise self.error(f"input '{name}' has a zero-size dimension ({_dims_text(dims)})")
        if dims and dims[0] is None:
            dims[0] = 1
        if any(d is None for d in dims):
            if not strict:
                return None
            vi = self.graph_inputs[name].type.tensor_type.shape.dim
            labels = [str(d.dim_value) if d.dim_value > 0 else d.dim_param or "?" for d in vi]
            open_dims = ",".join("?" if d is None else str(d) for d in dims)
            raise self.error(
                f"input '{name}' has dynamic dimensions ({'x'.join(labels)}); give its shape "
                f"with --input-shape {name}:{open_dims} (a size for each ?), or an --input "
                "array or calibration data of that shape"
            )
        return dims  # type: ignore[return-value]

    def _argument_shape(
        self,
        name: str,
        overrides: Mapping[str, list[int]],
        fixed: Mapping[str, Sequence[int]],
        oracle: _ShapeOracle,
    ) -> list[int]:
        if name in self.graph_inputs:
            self._argument_element(name, oracle)
            shape = self._graph_input_shape(name, overrides, strict=True)
            assert shape is not None
            return shape
        if name in overrides:
            shape = list(overrides[name])
        else:
            shape = self._inferred_shape(name, fixed, oracle)
        return shape

    def _argument_element(self, name: str, oracle: _ShapeOracle) -> Attribute:
        """The `nn` element type of an input: f32, an integer type or i1 (bool)."""
        declared = self._declared(name)
        if declared is not None:
            dtype, label = _dtype(declared[1]), _type_name(declared[1])
        else:
            info = oracle(name)
            dtype = info[1] if info is not None else np.dtype(np.float32)
            label = str(dtype)
        element = _INPUT_ELEMENTS.get(dtype) if dtype is not None else None
        if element is None:
            raise self.error(
                f"input '{name}' has element type {label}; npuc's nn dialect takes float32, "
                "integer (int8-int64, uint8-uint64) and bool inputs"
            )
        return element

    def _inferred_shape(
        self, name: str, fixed: Mapping[str, Sequence[int]], oracle: _ShapeOracle
    ) -> list[int]:
        info = oracle(name)
        if info is not None and all(d is not None for d in info[0]):
            return [int(d) for d in info[0]]  # type: ignore[arg-type]
        shape = self._probe(name, fixed)
        if shape is None:
            raise self.error(
                f"cannot determine the shape of input '{name}'; give it with --input-shape"
            )
        return shape

    def _probe(self, name: str, fixed: Mapping[str, Sequence[int]]) -> list[int] | None:
        """The shape of a cut input, by importing the part of the graph that computes it."""
        args = list(fixed)
        types = []
        for n in args:
            declared = self._declared(n)
            dtype = _dtype(declared[1]) if declared is not None else None
            types.append(TensorType(_INPUT_ELEMENTS.get(dtype, f32), fixed[n]))
        block = Block(arg_types=types)
        try:
            nodes = schedule(
                self.graph, [name], set(args) | set(self.initializers), set(args), None
            )
        except NpucError:
            return None
        importer = self._importer(block, {name}, _ShapeOracle(self.proto, fixed))
        importer.values.update(zip(args, block.args, strict=True))
        try:
            importer.run(nodes)
            value = importer.values.get(name)
        except NpucError:
            return None
        if importer.issues or value is None:
            return None
        return list(value.shape) if isinstance(value, np.ndarray) else list(shape_of(value))


_INPUT_ELEMENTS: dict[np.dtype | None, Attribute] = {
    np.dtype(np.float32): f32,
    **{
        np.dtype(t): xdsl_type(np.dtype(t))
        for t in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool")
    },
}


def _dims_text(dims: Sequence[int | None]) -> str:
    return "x".join("?" if d is None else str(d) for d in dims) or "scalar"
