"""A small .tflite writer for tests, on the `tflite` package's generated flatbuffer builders.

m = TFLiteModel()
x = m.tensor("x", [1, 8, 8, 3])
w = m.tensor("w", [4, 3, 3, 3], data=weights)
y = m.tensor("y", [1, 8, 8, 4])
m.op("CONV_2D", [x, w, -1], [y], "Conv2DOptions", Padding=0, StrideH=1, StrideW=1)
data = m.build(inputs=[x], outputs=[y])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np
import tflite

TYPES = {
    np.dtype(np.float32): tflite.TensorType.FLOAT32,
    np.dtype(np.float16): tflite.TensorType.FLOAT16,
    np.dtype(np.int8): tflite.TensorType.INT8,
    np.dtype(np.uint8): tflite.TensorType.UINT8,
    np.dtype(np.int16): tflite.TensorType.INT16,
    np.dtype(np.int32): tflite.TensorType.INT32,
    np.dtype(np.int64): tflite.TensorType.INT64,
    np.dtype(np.bool_): tflite.TensorType.BOOL,
}


@dataclass
class _Tensor:
    name: str
    shape: list[int]
    dtype: np.dtype
    data: np.ndarray | None
    scales: list[float] | None
    zero_points: list[int] | None
    axis: int
    type_code: int | None = None  # overrides TYPES[dtype] (resource tensors)
    sparse: bool = False  # stored as TFLite sparsity: dense dimensions, the last one CSR


@dataclass
class _Op:
    code: int
    inputs: list[int]
    outputs: list[int]
    options: str | None
    fields: dict[str, Any] = field(default_factory=dict)
    custom: str | None = None
    custom_options: bytes = b""


class TFLiteModel:
    def __init__(self) -> None:
        self.tensors: list[_Tensor] = []
        self.ops: list[_Op] = []
        # Further subgraphs (CALL_ONCE initialisers, IF/WHILE bodies): model, inputs, outputs.
        self.subgraphs: list[tuple[TFLiteModel, list[int], list[int]]] = []
        self.signatures: list[tuple[str, int]] = []  # (key, subgraph index); none by default

    def tensor(
        self,
        name: str,
        shape: Sequence[int],
        dtype: Any = np.float32,
        data: np.ndarray | None = None,
        scale: float | Sequence[float] | None = None,
        zero_point: int | Sequence[int] | None = None,
        axis: int = 0,
        sparse: bool = False,
    ) -> int:
        dtype = np.dtype(dtype)
        if data is not None:
            data = np.ascontiguousarray(data, dtype)
            assert list(data.shape) == list(shape), (name, data.shape, shape)
        scales = None if scale is None else [float(s) for s in np.ravel(scale)]
        zps = None
        if scales is not None:
            zp = 0 if zero_point is None else zero_point
            zps = [int(z) for z in np.ravel(zp)]
            if len(zps) == 1:
                zps *= len(scales)
        self.tensors.append(
            _Tensor(name, list(shape), dtype, data, scales, zps, axis, sparse=sparse)
        )
        return len(self.tensors) - 1

    def op(
        self,
        name: str,
        inputs: Sequence[int],
        outputs: Sequence[int],
        options: str | None = None,
        **fields: Any,
    ) -> None:
        code = getattr(tflite.BuiltinOperator, name)
        self.ops.append(_Op(code, list(inputs), list(outputs), options, fields))

    def resource(self, name: str) -> int:
        """A resource tensor (the handle VAR_HANDLE produces)."""
        self.tensors.append(
            _Tensor(name, [], np.dtype(np.int32), None, None, None, 0, tflite.TensorType.RESOURCE)
        )
        return len(self.tensors) - 1

    def add_subgraph(self, sub: TFLiteModel, inputs: Sequence[int], outputs: Sequence[int]) -> int:
        """Append `sub` (its own tensors and ops) as a further subgraph; returns its index."""
        self.subgraphs.append((sub, list(inputs), list(outputs)))
        return len(self.subgraphs)

    def custom_op(
        self, name: str, inputs: Sequence[int], outputs: Sequence[int], options: bytes = b""
    ) -> None:
        self.ops.append(
            _Op(
                tflite.BuiltinOperator.CUSTOM,
                list(inputs),
                list(outputs),
                None,
                custom=name,
                custom_options=options,
            )
        )

    # ------------------------------------------------------------------ serialisation

    def build(self, inputs: Sequence[int], outputs: Sequence[int]) -> bytes:
        b = flatbuffers.Builder(1024)
        buffers = [self._buffer(b, None)]
        graphs = [(self, list(inputs), list(outputs)), *self.subgraphs]
        codes: list[tuple[int, str | None]] = []
        for g, _, _ in graphs:
            for op in g.ops:
                if (op.code, op.custom) not in codes:
                    codes.append((op.code, op.custom))
        code_offsets = [self._code(b, code, custom) for code, custom in codes]
        subgraphs = [
            self._subgraph(b, g, ins, outs, buffers, codes, "main" if i == 0 else f"sub{i}")
            for i, (g, ins, outs) in enumerate(graphs)
        ]
        s_vec = self._tables(b, tflite.ModelStartSubgraphsVector, subgraphs)
        c_vec = self._tables(b, tflite.ModelStartOperatorCodesVector, code_offsets)
        b_vec = self._tables(b, tflite.ModelStartBuffersVector, buffers)
        description = b.CreateString("npuc test model")
        sig_vec = None
        if self.signatures:
            sigs = []
            for key, index in self.signatures:
                key_off = b.CreateString(key)
                tflite.SignatureDefStart(b)
                tflite.SignatureDefAddSignatureKey(b, key_off)
                tflite.SignatureDefAddSubgraphIndex(b, index)
                sigs.append(tflite.SignatureDefEnd(b))
            sig_vec = self._tables(b, tflite.ModelStartSignatureDefsVector, sigs)
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, 3)
        tflite.ModelAddOperatorCodes(b, c_vec)
        tflite.ModelAddSubgraphs(b, s_vec)
        tflite.ModelAddDescription(b, description)
        tflite.ModelAddBuffers(b, b_vec)
        if sig_vec is not None:
            tflite.ModelAddSignatureDefs(b, sig_vec)
        b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    @classmethod
    def _subgraph(
        cls,
        b: flatbuffers.Builder,
        g: TFLiteModel,
        inputs: Sequence[int],
        outputs: Sequence[int],
        buffers: list[int],
        codes: list[tuple[int, str | None]],
        name: str,
    ) -> int:
        buffer_of = []
        for t in g.tensors:
            if t.data is None:
                buffer_of.append(0)
            else:
                data = t.data[t.data != 0] if t.sparse else t.data
                buffers.append(cls._buffer(b, data))
                buffer_of.append(len(buffers) - 1)
        tensors = [cls._tensor(b, t, buf) for t, buf in zip(g.tensors, buffer_of, strict=True)]
        ops = [cls._op(b, op, codes.index((op.code, op.custom))) for op in g.ops]
        t_vec = cls._tables(b, tflite.SubGraphStartTensorsVector, tensors)
        o_vec = cls._tables(b, tflite.SubGraphStartOperatorsVector, ops)
        in_vec = b.CreateNumpyVector(np.array(inputs, np.int32))
        out_vec = b.CreateNumpyVector(np.array(outputs, np.int32))
        name_off = b.CreateString(name)
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, t_vec)
        tflite.SubGraphAddOperators(b, o_vec)
        tflite.SubGraphAddInputs(b, in_vec)
        tflite.SubGraphAddOutputs(b, out_vec)
        tflite.SubGraphAddName(b, name_off)
        return tflite.SubGraphEnd(b)

    @staticmethod
    def _tables(b: flatbuffers.Builder, start: Any, offsets: Sequence[int]) -> int:
        start(b, len(offsets))
        for off in reversed(offsets):
            b.PrependUOffsetTRelative(off)
        return b.EndVector()

    @staticmethod
    def _buffer(b: flatbuffers.Builder, data: np.ndarray | None) -> int:
        vec = None
        if data is not None:
            raw = np.frombuffer(data.tobytes(), np.uint8)
            b.StartVector(1, raw.size, 16)  # TFLite aligns buffers to 16 bytes
            b.head -= raw.size
            b.Bytes[b.head : b.head + raw.size] = raw.tobytes()
            vec = b.EndVector()
        tflite.BufferStart(b)
        if vec is not None:
            tflite.BufferAddData(b, vec)
        return tflite.BufferEnd(b)

    @staticmethod
    def _tensor(b: flatbuffers.Builder, t: _Tensor, buffer: int) -> int:
        name = b.CreateString(t.name)
        shape = b.CreateNumpyVector(np.array(t.shape, np.int32))
        quant = None
        if t.scales is not None:
            scales = b.CreateNumpyVector(np.array(t.scales, np.float32))
            zps = b.CreateNumpyVector(np.array(t.zero_points, np.int64))
            tflite.QuantizationParametersStart(b)
            tflite.QuantizationParametersAddScale(b, scales)
            tflite.QuantizationParametersAddZeroPoint(b, zps)
            tflite.QuantizationParametersAddQuantizedDimension(b, t.axis)
            quant = tflite.QuantizationParametersEnd(b)
        sparsity = TFLiteModel._sparsity(b, t.data) if t.sparse and t.data is not None else None
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        tflite.TensorAddType(b, TYPES[t.dtype] if t.type_code is None else t.type_code)
        tflite.TensorAddBuffer(b, buffer)
        tflite.TensorAddName(b, name)
        if quant is not None:
            tflite.TensorAddQuantization(b, quant)
        if sparsity is not None:
            tflite.TensorAddSparsity(b, sparsity)
        return tflite.TensorEnd(b)

    @staticmethod
    def _sparsity(b: flatbuffers.Builder, data: np.ndarray) -> int:
        """Dense leading dimensions, the last one CSR over the non-zero values."""
        rows = data.reshape(-1, data.shape[-1])
        segments = np.concatenate([[0], np.cumsum((rows != 0).sum(axis=1))]).astype(np.int32)
        indices = np.nonzero(rows)[1].astype(np.int32)
        vectors = []
        for values in (segments, indices):
            vec = b.CreateNumpyVector(values)
            tflite.Int32VectorStart(b)
            tflite.Int32VectorAddValues(b, vec)
            vectors.append(tflite.Int32VectorEnd(b))
        dims = []
        for d, size in enumerate(data.shape):
            tflite.DimensionMetadataStart(b)
            if d < data.ndim - 1:
                tflite.DimensionMetadataAddFormat(b, tflite.DimensionType.DENSE)
                tflite.DimensionMetadataAddDenseSize(b, size)
            else:
                tflite.DimensionMetadataAddFormat(b, tflite.DimensionType.SPARSE_CSR)
                int32 = tflite.SparseIndexVector.Int32Vector
                tflite.DimensionMetadataAddArraySegmentsType(b, int32)
                tflite.DimensionMetadataAddArraySegments(b, vectors[0])
                tflite.DimensionMetadataAddArrayIndicesType(b, int32)
                tflite.DimensionMetadataAddArrayIndices(b, vectors[1])
            dims.append(tflite.DimensionMetadataEnd(b))
        order = b.CreateNumpyVector(np.arange(data.ndim, dtype=np.int32))
        dim_vec = TFLiteModel._tables(b, tflite.SparsityParametersStartDimMetadataVector, dims)
        tflite.SparsityParametersStart(b)
        tflite.SparsityParametersAddTraversalOrder(b, order)
        tflite.SparsityParametersAddDimMetadata(b, dim_vec)
        return tflite.SparsityParametersEnd(b)

    @staticmethod
    def _code(b: flatbuffers.Builder, code: int, custom: str | None) -> int:
        custom_name = b.CreateString(custom) if custom else None
        tflite.OperatorCodeStart(b)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        tflite.OperatorCodeAddBuiltinCode(b, code)
        tflite.OperatorCodeAddVersion(b, 1)
        if custom_name is not None:
            tflite.OperatorCodeAddCustomCode(b, custom_name)
        return tflite.OperatorCodeEnd(b)

    @staticmethod
    def _op(b: flatbuffers.Builder, op: _Op, code_index: int) -> int:
        options = None
        if op.options is not None:
            vectors = {
                k: b.CreateNumpyVector(np.array(v, np.int32))
                for k, v in op.fields.items()
                if isinstance(v, list | tuple | np.ndarray)
            }
            strings = {k: v for k, v in op.fields.items() if isinstance(v, str)}
            vectors.update({k: b.CreateString(v) for k, v in strings.items()})
            getattr(tflite, f"{op.options}Start")(b)
            for key, value in op.fields.items():
                getattr(tflite, f"{op.options}Add{key}")(b, vectors.get(key, value))
            options = getattr(tflite, f"{op.options}End")(b)
        ins = b.CreateNumpyVector(np.array(op.inputs, np.int32))
        outs = b.CreateNumpyVector(np.array(op.outputs, np.int32))
        custom = None
        if op.custom_options:
            custom = b.CreateNumpyVector(np.frombuffer(op.custom_options, np.uint8))
        tflite.OperatorStart(b)
        tflite.OperatorAddOpcodeIndex(b, code_index)
        tflite.OperatorAddInputs(b, ins)
        tflite.OperatorAddOutputs(b, outs)
        if options is not None:
            tflite.OperatorAddBuiltinOptionsType(b, getattr(tflite.BuiltinOptions, op.options))
            tflite.OperatorAddBuiltinOptions(b, options)
        if custom is not None:
            tflite.OperatorAddCustomOptions(b, custom)
        return tflite.OperatorEnd(b)


def layer_weights(
    m: TFLiteModel,
    rng: np.random.Generator,
    name: str,
    shape: Sequence[int],
    axis: int,
    x_scale: float,
    fan_in: int,
    bias_dtype: Any = np.int32,
    bias_bound: int = 300,
) -> tuple[int, int]:
    """Random int8 weights quantized per channel on `axis`, scaled so that `fan_in` inputs of
    unit range sum to about one, and their bias (scale weight scale * `x_scale`)."""
    w = rng.integers(-127, 128, shape).astype(np.int8)
    ws = rng.uniform(0.5, 1.5, shape[axis]) * (1.2 / (127 * np.sqrt(fan_in)))
    bias = rng.integers(-bias_bound, bias_bound, shape[axis]).astype(bias_dtype)
    wt = m.tensor(f"{name}_w", shape, np.int8, data=w, scale=ws, axis=axis)
    bt = m.tensor(f"{name}_b", [shape[axis]], bias_dtype, data=bias, scale=ws * x_scale)
    return wt, bt


def run_litert(data: bytes, feeds: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Outputs of LiteRT's reference kernels for the model bytes and positional inputs."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interp = Interpreter(
        model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF
    )
    interp.allocate_tensors()
    for detail, x in zip(interp.get_input_details(), feeds, strict=True):
        interp.set_tensor(detail["index"], x)
    interp.invoke()
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]


#: (input dtype, elements compared) of every check_exact that passed; bench_tflite.py counts them.
EXACT_CASES: list[tuple[str, int]] = []


def check_exact(data: bytes, feeds: list[np.ndarray]) -> None:
    """npuc (import + qnn interpreter) and LiteRT's reference kernels give identical outputs.

    Every output must match in dtype and value, bit for bit.
    """
    from npuc.frontends.tflite import import_tflite
    from npuc.graph_io import entry_function, input_names
    from npuc.runtime.qnn_interpreter import run_module

    module = import_tflite(data)
    names = input_names(entry_function(module))
    got = run_module(module, dict(zip(names, feeds, strict=True)))
    expected = run_litert(data, feeds)
    for (name, value), ref in zip(got.items(), expected, strict=True):
        assert value.dtype == ref.dtype, (name, value.dtype, ref.dtype)
        np.testing.assert_array_equal(value, ref, err_msg=name)
    kind = str(feeds[0].dtype) if feeds else "none"
    EXACT_CASES.append((kind, sum(int(r.size) for r in expected)))


def run_litert_sequence(
    data: bytes, steps: Sequence[Sequence[np.ndarray]]
) -> list[list[np.ndarray]]:
    """Outputs of each of several invocations of one LiteRT interpreter (variables persist)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interp = Interpreter(
        model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF
    )
    interp.allocate_tensors()
    results = []
    for feeds in steps:
        for detail, x in zip(interp.get_input_details(), feeds, strict=True):
            interp.set_tensor(detail["index"], x)
        interp.invoke()
        results.append([interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()])
    return results


class Q:
    """An int8 activation spec: shape, scale and zero point (`data` makes it a constant)."""

    def __init__(
        self, shape: Sequence[int], scale: float, zp: int = 0, data: np.ndarray | None = None
    ):
        self.shape, self.scale, self.zp, self.data = list(shape), scale, zp, data


def single_op(
    op: str,
    inputs: Sequence[Any],
    out: Q | tuple[Sequence[int], type],
    options: str | None = None,
    *,
    rng: np.random.Generator,
    feeds: Sequence[np.ndarray] | None = None,
    **fields: Any,
) -> tuple[bytes, list[np.ndarray]]:
    """A one-operator int8 model and its inputs: Q inputs are int8 activations (random feeds
    from `rng` unless `feeds` are given) or constants, arrays int32/int64 constants; the
    output is a Q or a (shape, dtype) pair."""
    m = TFLiteModel()
    ids, args, made = [], [], []
    for i, spec in enumerate(inputs):
        if isinstance(spec, Q):
            t = m.tensor(
                f"x{i}", spec.shape, np.int8, data=spec.data, scale=spec.scale, zero_point=spec.zp
            )
            if spec.data is None:
                args.append(t)
                made.append(rng.integers(-128, 128, spec.shape).astype(np.int8))
        else:
            data = np.asarray(spec)
            t = m.tensor(f"c{i}", data.shape, data.dtype, data=data)
        ids.append(t)
    if isinstance(out, Q):
        y = m.tensor("y", out.shape, np.int8, scale=out.scale, zero_point=out.zp)
    else:
        y = m.tensor("y", out[0], out[1])
    m.op(op, ids, [y], options, **fields)
    return m.build(args, [y]), list(feeds) if feeds is not None else made
