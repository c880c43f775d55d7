"""The `npu` dialect: instructions on (region, offset, shape, strides) operands.

A module holds one `npu.program`: the region sizes, the I/O descriptors, the
layer names, the constants region's bytes, and the instructions in program
order. Every data operand is an `#npu.tensor` (dialects/npu_attrs.py), never an
SSA value; every instruction returns an `!npu.token` and lists the tokens it
waits for after `after`. Each instruction runs on the engine its kind implies
(`dma`, `compute` or `host`); an engine runs its instructions in program order.

Tensors are logical NCHW / [B, M, K] views; their strides carry the memory
layout. Arithmetic is the `qnn` dialect's (docs/quantization.md): `requantize`,
rounding modes and clamps as in `qnn.Requantizing`. The binary encoding of
every field: docs/binary-format.md. The rules the verifiers apply live in
npu_rules.py, shared with the binary loader.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    BoolAttr,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float32Type,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    SymbolNameConstraint,
    TensorType,
    i8,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, NoTerminator
from xdsl.utils.exceptions import VerifyException

from npuc.diagnostics import NpucError
from npuc.element_types import OpVerifyException
from npuc.shape_text import shape_text

from . import npu_isa as isa
from .arrays import I64Array
from .npu_attrs import IOAttr, RegionAttr, StateAttr, StreamAttr, TensorAttr, TokenType
from .npu_rules import check_hazards, check_instruction, check_program
from .npu_text import install as install_text
from .quant_types import UniformQuantizedType


def _tensor(attr: Attribute) -> TensorAttr:
    assert isinstance(attr, TensorAttr)
    return attr


def _error(op: IRDLOperation, e: Exception) -> VerifyException:
    return VerifyException(f"'{op.name}': {e}")


@irdl_op_definition
class ProgramOp(IRDLOperation):
    """The program: regions, I/O, layer names, constants (`constants`: the region's first bytes,
    the rest is zero) and the instructions in order. `debug` holds optional string pairs,
    `state` the state pairs of a stateful (streaming) program (`#npu.state`), `streams` the
    runs of the constants stored encoded in the binary (`#npu.stream`, in order)."""

    name = "npu.program"
    sym_name = prop_def(SymbolNameConstraint())
    memory_regions = prop_def(ArrayAttr[RegionAttr])
    inputs = prop_def(ArrayAttr[IOAttr])
    outputs = prop_def(ArrayAttr[IOAttr])
    layers = prop_def(ArrayAttr[StringAttr])
    constants = opt_prop_def(DenseIntOrFPElementsAttr)
    debug = opt_prop_def(DictionaryAttr)
    state = opt_prop_def(ArrayAttr[StateAttr])
    streams = opt_prop_def(ArrayAttr[StreamAttr])
    body = region_def()
    traits = traits_def(NoTerminator(), IsolatedFromAbove())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$sym_name `regions` $memory_regions `inputs` $inputs `outputs` $outputs `layers` $layers "
        "attr-dict-with-keyword $body"
    )

    @classmethod
    def from_program(cls, program: isa.Program, host_bodies: Mapping[int, Region]) -> ProgramOp:
        """The op stating `program`, the inverse of `program()`: properties equal to their
        defaults are left out, and host instruction `i` takes the region `host_bodies[i]`
        (the lowering builds them from the ops it moves to the host, the disassembler parses
        them from the binary's text)."""
        ops: list[NPUInstruction] = []
        for index, inst in enumerate(program.instructions):
            if inst.op == "host":
                op: NPUInstruction = HostOp.from_instruction(inst, host_bodies[index])
            else:
                kind = INSTRUCTIONS[inst.op]
                op = kind.create(result_types=[TokenType()], properties=kind.properties_of(inst))
            op.operands = [ops[d].token for d in inst.deps]
            ops.append(op)
        props: dict[str, Attribute] = {
            "sym_name": StringAttr(program.name),
            "memory_regions": ArrayAttr([RegionAttr.from_region(r) for r in program.regions]),
            "inputs": ArrayAttr([IOAttr.from_desc(d) for d in program.inputs]),
            "outputs": ArrayAttr([IOAttr.from_desc(d) for d in program.outputs]),
            "layers": ArrayAttr([StringAttr(name) for name in program.layers]),
        }
        if program.constants:
            ty = TensorType(i8, [len(program.constants)])
            props["constants"] = DenseIntOrFPElementsAttr(ty, BytesAttr(program.constants))
        if program.debug:
            props["debug"] = DictionaryAttr({k: StringAttr(v) for k, v in program.debug})
        if program.state:
            props["state"] = ArrayAttr([StateAttr.from_pair(p) for p in program.state])
        if program.streams:
            props["streams"] = ArrayAttr([StreamAttr.from_stream(s) for s in program.streams])
        return cls.create(properties=props, regions=[Region(Block(ops))])

    def constant_bytes(self) -> bytes:
        if self.constants is None:
            return b""
        ty = self.constants.type
        if ty.get_element_type() != i8 or len(ty.get_shape()) != 1:
            raise VerifyException("'npu.program': constants must be a rank-1 i8 tensor")
        from npuc.tensors import from_dense

        return np.ascontiguousarray(from_dense(self.constants)).tobytes()

    def program(self) -> isa.Program:
        """The program as plain data (raises VerifyException on IR that has no such form)."""
        index: dict[SSAValue, int] = {}
        instructions = []
        ops = self.body.blocks[0].ops if self.body.blocks else ()
        for i, op in enumerate(ops):
            if not isinstance(op, NPUInstruction):
                raise VerifyException(f"'npu.program': {op.name} is not an npu instruction")
            deps = []
            for dep in op.deps:
                if dep not in index:
                    raise VerifyException(
                        f"'npu.program': instruction {i} waits for a token that no earlier "
                        "instruction returns"
                    )
                deps.append(index[dep])
            index[op.token] = i
            instructions.append(op.instruction(tuple(deps)))
        debug = []
        for key, value in self.debug.data.items() if self.debug is not None else ():
            if not isinstance(value, StringAttr):
                raise VerifyException("'npu.program': debug values must be strings")
            debug.append((key, value.data))
        return isa.Program(
            name=self.sym_name.data,
            regions=tuple(r.region() for r in self.memory_regions),
            inputs=tuple(d.desc() for d in self.inputs),
            outputs=tuple(d.desc() for d in self.outputs),
            layers=tuple(s.data for s in self.layers),
            instructions=tuple(instructions),
            constants=self.constant_bytes(),
            debug=tuple(debug),
            state=tuple(s.pair() for s in self.state) if self.state is not None else (),
            streams=tuple(s.stream() for s in self.streams) if self.streams is not None else (),
        )

    def verify_(self) -> None:
        if len(self.body.blocks) > 1 or (self.body.blocks and self.body.blocks[0].args):
            raise VerifyException("'npu.program': the body is one block without arguments")
        program = self.program()
        try:
            check_program(program)
            check_hazards(program)
        except isa.InstructionError as e:  # reported at the instruction's own line
            instruction = list(self.body.blocks[0].ops)[e.index]
            raise OpVerifyException(instruction, f"'{self.name}': {e}") from None
        except isa.ISAError as e:
            raise _error(self, e) from None


def program_op(module: ModuleOp) -> ProgramOp:
    """The one npu.program of a module (NpucError otherwise)."""
    programs = [op for op in module.ops if isinstance(op, ProgramOp)]
    others = [op.name for op in module.ops if not isinstance(op, ProgramOp)]
    if len(programs) != 1 or others:
        raise NpucError(
            "the npubin target needs a module holding exactly one npu.program"
            + (f" (found {', '.join(sorted(set(others)))})" if others else "")
        )
    return programs[0]


# --------------------------------------------------------------------------- instructions


def _value(f: isa.Field, attr: Attribute) -> Any:
    if f.choices or f.string:
        assert isinstance(attr, StringAttr)
        return attr.data
    if f.count:
        assert isinstance(attr, DenseArrayBase)
        return tuple(int(v) for v in attr.get_values())
    assert isinstance(attr, IntegerAttr)
    return bool(attr.value.data) if f.flag else attr.value.data


def _attr(f: isa.Field, value: Any) -> Attribute:
    if f.choices or f.string:
        return StringAttr(value)
    if f.count:
        return DenseArrayBase.from_list(i64, list(value))
    if f.flag:
        return BoolAttr.from_bool(value)
    return IntegerAttr(value, i64)


class NPUInstruction(IRDLOperation):
    """Base of every instruction: waits for `deps`, returns a token, optionally names a layer.

    `layer` indexes the program's `layers`. Properties left out take their default
    (docs/binary-format.md), the clamp the ofm's storage range.
    """

    OP: ClassVar[str]
    deps = var_operand_def(TokenType())
    token = result_def(TokenType())
    layer = opt_prop_def(IntegerAttr[I64])
    traits = traits_def(HasParent(ProgramOp))
    irdl_options = (ParsePropInAttrDict(),)

    @property
    def spec(self) -> isa.OpSpec:
        return isa.SPECS[self.OP]

    def operand_refs(self) -> tuple[isa.TensorRef, ...]:
        return tuple(_tensor(self.properties[role]).ref() for role in self.spec.operands)

    def params(self, operands: Sequence[isa.TensorRef]) -> dict[str, Any]:
        params = isa.default_params(self.OP, operands)
        for f in self.spec.fields:
            if f.name in self.properties:
                params[f.name] = _value(f, self.properties[f.name])
        return params

    def instruction(self, deps: tuple[int, ...] = ()) -> isa.Instruction:
        operands = self.operand_refs()
        layer = None if self.layer is None else self.layer.value.data
        return isa.Instruction(self.OP, operands, self.params(operands), deps, layer)

    @classmethod
    def properties_of(cls, inst: isa.Instruction) -> dict[str, Attribute]:
        """The properties that state `inst` (defaults left out), for the disassembler."""
        props: dict[str, Attribute] = {}
        for role, t in zip(inst.roles(), inst.operands, strict=True):
            props[role] = TensorAttr.from_ref(t)
        defaults = isa.default_params(inst.op, inst.operands)
        for f in isa.SPECS[inst.op].fields:
            if f.required or inst.params[f.name] != defaults[f.name]:
                props[f.name] = _attr(f, inst.params[f.name])
        if inst.layer is not None:
            props["layer"] = IntegerAttr(inst.layer, i64)
        order = list(cls.get_irdl_definition().properties)
        return dict(sorted(props.items(), key=lambda item: order.index(item[0])))

    def verify_(self) -> None:
        unknown = sorted(k for k in self.attributes if "." not in k)
        if unknown:
            raise VerifyException(f"'{self.name}': unknown properties {', '.join(unknown)}")
        if self.layer is not None and self.layer.value.data < 0:
            raise VerifyException(f"'{self.name}': layer must be non-negative")
        try:
            check_instruction(self.instruction())
        except isa.ISAError as e:
            raise _error(self, e) from None


def _format(*roles: str) -> str:
    return " ".join(f"`{role}` ${role}" for role in roles) + " (`after` $deps^)? attr-dict"


@irdl_op_definition
class DmaOp(NPUInstruction):
    """dst[i] = src[i] for every index i of the common shape (dma engine; any two regions)."""

    name = "npu.dma"
    OP: ClassVar[str] = "dma"
    src = prop_def(TensorAttr)
    dst = prop_def(TensorAttr)
    assembly_format = "$src `->` $dst (`after` $deps^)? attr-dict"


@irdl_op_definition
class Conv2dOp(NPUInstruction):
    """Convolution of ifm [N, Ci, H, W] with weights [Co, Ci / groups, KH, KW] into ofm.

    acc[n, o, y, x] = bias[o] + sum (ifm - ifm_zero_point) * (weights - wzp[o]) over the
    window (padding is ifm_zero_point), exact; ofm = clamp(ofm_zero_point +
    requantize(acc, multiplier[o], shift[o], rounding), clamp_min, clamp_max).
    `bias_scale` is i32 [Co, 4], row o = (bias, multiplier, shift, wzp): the per-channel
    parameter table (Vela's scale/bias stream). pads: top, left, bottom, right.
    Depthwise: groups = Ci. int8 or int16 activations.
    """

    name = "npu.conv2d"
    OP: ClassVar[str] = "conv2d"
    ifm = prop_def(TensorAttr)
    weights = prop_def(TensorAttr)
    bias_scale = prop_def(TensorAttr)
    ofm = prop_def(TensorAttr)
    strides = opt_prop_def(I64Array)
    pads = opt_prop_def(I64Array)
    dilations = opt_prop_def(I64Array)
    groups = opt_prop_def(IntegerAttr[I64])
    ifm_zero_point = opt_prop_def(IntegerAttr[I64])
    ofm_zero_point = opt_prop_def(IntegerAttr[I64])
    clamp_min = opt_prop_def(IntegerAttr[I64])
    clamp_max = opt_prop_def(IntegerAttr[I64])
    rounding = opt_prop_def(StringAttr)
    assembly_format = _format("ifm", "weights", "bias_scale", "ofm")


@irdl_op_definition
class MatMulOp(NPUInstruction):
    """Batched matmul lhs [B, M, K] x rhs [B, K, N] -> ofm [B, M, N] (fully connected: rhs is
    the transposed weight view; broadcast batches: stride 0).

    acc[b, m, n] = bias[n] + sum_k (lhs - lhs_zero_point)(rhs - zp[n]); the output stage
    is conv2d's, with `bias_scale` row n = (bias, multiplier, shift, zp) for column n.
    """

    name = "npu.matmul"
    OP: ClassVar[str] = "matmul"
    lhs = prop_def(TensorAttr)
    rhs = prop_def(TensorAttr)
    bias_scale = prop_def(TensorAttr)
    ofm = prop_def(TensorAttr)
    lhs_zero_point = opt_prop_def(IntegerAttr[I64])
    ofm_zero_point = opt_prop_def(IntegerAttr[I64])
    clamp_min = opt_prop_def(IntegerAttr[I64])
    clamp_max = opt_prop_def(IntegerAttr[I64])
    rounding = opt_prop_def(StringAttr)
    assembly_format = _format("lhs", "rhs", "bias_scale", "ofm")


@irdl_op_definition
class PoolOp(NPUInstruction):
    """Window pooling of ifm [N, C, H, W] into ofm [N, C, OH, OW] (output size as qnn's pools).

    - `max`: the largest stored value of each window (padding never wins), clamped.
    - `avg`: qnn.avg_pool2d: clamp(ofm_zero_point + round(S * multiplier / (count * 2^shift)))
      with S the window sum of (ifm - ifm_zero_point) and count per `count_include_pad`;
      `tflite` rounding rounds the stored mean (multiplier must be 1). A global average
      pool is a window of the whole input.
    - `sum`: clamp(ofm_zero_point + requantize(S, multiplier, shift, rounding)) (qnn.reduce_sum,
      and qnn.requantize as a 1 x 1 window).
    """

    name = "npu.pool"
    OP: ClassVar[str] = "pool"
    ifm = prop_def(TensorAttr)
    ofm = prop_def(TensorAttr)
    mode = prop_def(StringAttr)
    kernel = opt_prop_def(I64Array)
    strides = opt_prop_def(I64Array)
    pads = opt_prop_def(I64Array)
    dilations = opt_prop_def(I64Array)
    ceil_mode = opt_prop_def(BoolAttr)
    count_include_pad = opt_prop_def(BoolAttr)
    ifm_zero_point = opt_prop_def(IntegerAttr[I64])
    ofm_zero_point = opt_prop_def(IntegerAttr[I64])
    multiplier = opt_prop_def(IntegerAttr[I64])
    shift = opt_prop_def(IntegerAttr[I64])
    clamp_min = opt_prop_def(IntegerAttr[I64])
    clamp_max = opt_prop_def(IntegerAttr[I64])
    rounding = opt_prop_def(StringAttr)
    assembly_format = _format("ifm", "ofm")


@irdl_op_definition
class EltwiseOp(NPUInstruction):
    """ofm = f(lhs, rhs) elementwise on one shape (broadcast an input with stride 0).

    With a = lhs - lhs_zero_point, b = rhs - rhs_zero_point, R = requantize and
    a' = R(a << left_shift, lhs_multiplier, lhs_shift), b' likewise (qnn.add's scheme):
    `add` a' + b', `sub` a' - b', `squared_difference` (a' - b')^2, `mul` a * b, each then
    clamp(ofm_zero_point + R(acc, multiplier, shift, rounding)); `maximum`/`minimum` of the
    stored values (one element type, no rescaling); `prelu` (rhs is alpha): R(a, multiplier,
    shift) where a >= 0, else R(a * b, rhs_multiplier, rhs_shift); `div`: qnn.div, with
    `overshift`.
    """

    name = "npu.eltwise"
    OP: ClassVar[str] = "eltwise"
    lhs = prop_def(TensorAttr)
    rhs = prop_def(TensorAttr)
    ofm = prop_def(TensorAttr)
    kind = prop_def(StringAttr)
    lhs_zero_point = opt_prop_def(IntegerAttr[I64])
    rhs_zero_point = opt_prop_def(IntegerAttr[I64])
    ofm_zero_point = opt_prop_def(IntegerAttr[I64])
    left_shift = opt_prop_def(IntegerAttr[I64])
    lhs_multiplier = opt_prop_def(IntegerAttr[I64])
    lhs_shift = opt_prop_def(IntegerAttr[I64])
    rhs_multiplier = opt_prop_def(IntegerAttr[I64])
    rhs_shift = opt_prop_def(IntegerAttr[I64])
    multiplier = opt_prop_def(IntegerAttr[I64])
    shift = opt_prop_def(IntegerAttr[I64])
    clamp_min = opt_prop_def(IntegerAttr[I64])
    clamp_max = opt_prop_def(IntegerAttr[I64])
    rounding = opt_prop_def(StringAttr)
    overshift = opt_prop_def(StringAttr)
    assembly_format = _format("lhs", "rhs", "ofm")


@irdl_op_definition
class LutOp(NPUInstruction):
    """ofm = table[ifm - table_base]: entry k holds the result for stored value table_base + k
    (qnn.lut: table_base is the input type's storage minimum). The table has the ofm's type."""

    name = "npu.lut"
    OP: ClassVar[str] = "lut"
    ifm = prop_def(TensorAttr)
    table = prop_def(TensorAttr)
    ofm = prop_def(TensorAttr)
    table_base = opt_prop_def(IntegerAttr[I64])
    assembly_format = _format("ifm", "table", "ofm")


@irdl_op_definition
class SoftmaxOp(NPUInstruction):
    """qnn.softmax over the last axis: TFLite's int8 fixed-point softmax with its parameters."""

    name = "npu.softmax"
    OP: ClassVar[str] = "softmax"
    ifm = prop_def(TensorAttr)
    ofm = prop_def(TensorAttr)
    input_multiplier = opt_prop_def(IntegerAttr[I64])
    input_left_shift = opt_prop_def(IntegerAttr[I64])
    diff_min = opt_prop_def(IntegerAttr[I64])
    assembly_format = _format("ifm", "ofm")


@irdl_op_definition
class MoveOp(NPUInstruction):
    """ofm = pad(reshape(transpose(ifm, perm), inner), pads, pad_value): data movement without
    arithmetic on the compute engine. `inner` is the ofm shape less the pads (begins, then
    ends); the reshape is row-major. A plain strided copy is a move with neither."""

    name = "npu.move"
    OP: ClassVar[str] = "move"
    ifm = prop_def(TensorAttr)
    ofm = prop_def(TensorAttr)
    perm = opt_prop_def(I64Array)
    pads = opt_prop_def(I64Array)
    pad_value = opt_prop_def(IntegerAttr[I64])
    assembly_format = _format("ifm", "ofm")


def host_dtype(ty: Attribute) -> str | None:
    """The npu element type that stores the elements of a tensor type, if any."""
    if not isinstance(ty, TensorType):
        return None
    element = ty.get_element_type()
    if isinstance(element, UniformQuantizedType):
        bits = max(8, element.storage_bits.data)
        return f"{'i' if element.storage_signed.data else 'u'}{bits}"
    if isinstance(element, IntegerType):
        if element.width.data == 1:
            return "b8"
        unsigned = element.signedness.data == Signedness.UNSIGNED
        name = f"{'u' if unsigned else 'i'}{element.width.data}"
        return name if name in isa.DTYPES else None
    return "f32" if isinstance(element, Float32Type) else None


def host_body_text(body: Region) -> str:
    """The body of an npu.host in generic form: how the binary stores it."""
    stream = io.StringIO()
    Printer(stream=stream, print_generic_format=True).print_region(body)
    return stream.getvalue()


@irdl_op_definition
class HostOp(NPUInstruction):
    """Ops with no instruction, run on the host CPU: the body's block arguments take the
    `ins` tensors, its `npu.yield` gives the `outs` (the nn/qnn reference semantics)."""

    name = "npu.host"
    OP: ClassVar[str] = "host"
    ins = prop_def(ArrayAttr[TensorAttr])
    outs = prop_def(ArrayAttr[TensorAttr])
    body = region_def("single_block")
    traits = traits_def(HasParent(ProgramOp), IsolatedFromAbove())
    assembly_format = "`ins` $ins `outs` $outs (`after` $deps^)? attr-dict-with-keyword $body"

    @classmethod
    def from_instruction(cls, inst: isa.Instruction, body: Region) -> HostOp:
        """The npu.host of a host instruction, running `body` (its text is `inst`'s body)."""
        n = inst.params["inputs"]
        props: dict[str, Attribute] = {
            "ins": ArrayAttr([TensorAttr.from_ref(t) for t in inst.operands[:n]]),
            "outs": ArrayAttr([TensorAttr.from_ref(t) for t in inst.operands[n:]]),
        }
        if inst.layer is not None:
            props["layer"] = IntegerAttr(inst.layer, i64)
        return cls.create(result_types=[TokenType()], properties=props, regions=[body])

    def operand_refs(self) -> tuple[isa.TensorRef, ...]:
        return tuple(t.ref() for t in (*self.ins, *self.outs))

    def params(self, operands: Sequence[isa.TensorRef]) -> dict[str, Any]:
        return {"body": host_body_text(self.body), "inputs": len(self.ins)}

    def verify_(self) -> None:
        super().verify_()
        block = self.body.block
        if not isinstance(block.last_op, YieldOp):
            raise VerifyException("'npu.host': the body must end in npu.yield")
        checks = (
            ("argument", block.args, self.ins),
            ("yielded value", block.last_op.operands, self.outs),
        )
        for what, values, tensors in checks:
            if len(values) != len(tensors):
                raise VerifyException(
                    f"'npu.host': {len(tensors)} tensors need as many body {what}s, "
                    f"got {len(values)}"
                )
            for i, (value, t) in enumerate(zip(values, tensors, strict=True)):
                ref = t.ref()
                ty = value.type
                # a rank-0 tensor is stored as one element, shape [1]
                shape = (tuple(ty.get_shape()) or (1,)) if isinstance(ty, TensorType) else None
                if shape != ref.shape or host_dtype(ty) != ref.dtype:
                    raise VerifyException(
                        f"'npu.host': body {what} {i} of type {ty} does not match "
                        f"{ref.dtype} {shape_text(ref.shape)}"
                    )


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The results of an npu.host body."""

    name = "npu.yield"
    values = var_operand_def()
    traits = traits_def(HasParent(HostOp), IsTerminator())
    assembly_format = "attr-dict ($values^ `:` type($values))?"


INSTRUCTIONS: dict[str, type[NPUInstruction]] = {
    op.OP: op
    for op in (DmaOp, Conv2dOp, MatMulOp, PoolOp, EltwiseOp, LutOp, SoftmaxOp, MoveOp, HostOp)
}

for _instruction in INSTRUCTIONS.values():
    if _instruction is not HostOp:  # its body is a region: the format prints it
        install_text(_instruction)

NPU = Dialect(
    "npu",
    [ProgramOp, *INSTRUCTIONS.values(), YieldOp],
    [TokenType, TensorAttr, RegionAttr, IOAttr, StateAttr, StreamAttr],
)

__all__ = [
    "INSTRUCTIONS",
    "NPU",
    "Conv2dOp",
    "DmaOp",
    "EltwiseOp",
    "HostOp",
    "IOAttr",
    "LutOp",
    "MatMulOp",
    "MoveOp",
    "NPUInstruction",
    "PoolOp",
    "ProgramOp",
    "RegionAttr",
    "SoftmaxOp",
    "TensorAttr",
    "TokenType",
    "YieldOp",
]
