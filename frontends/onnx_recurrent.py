"""ONNX LSTM, GRU and RNN nodes, unrolled over their static sequence into `nn` ops.

For each direction, one `nn.fully_connected` projects every time step of X at
once (weight W[d], bias Wb + Rb); each step then adds the recurrent product
H·Rᵀ (another `nn.fully_connected`), splits the gates and combines them with
elementwise ops. Constant weights are sliced and biases summed with numpy at
import time; weights given at run time take the same path through `nn.slice`
and `nn.add`. A zero initial state (absent, or a constant zero) drops the terms
it would multiply. Activations follow onnxruntime: names are case-insensitive,
and `activation_alpha`/`activation_beta` are consumed in order by the functions
that take them (Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu),
with ONNX's defaults once a list runs out. `clip` bounds every gate's input (not the
cell state fed to LSTM's h). Unsupported: a sequence_lens that is not a constant
equal to the full length for every batch entry, and activations ONNX does not define.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import TensorType, f32, i1
from xdsl.ir import SSAValue

from npuc.dialects import nn

from .onnx_elementwise import f32_attr, i64_attr
from .onnx_graph import Converter, NodeContext, Unsupported, Value, shape_of

Tensor = SSAValue | np.ndarray

# name -> (takes alpha, takes beta, default alpha, default beta), as onnxruntime reads them.
_ACTIVATION_ARGS: dict[str, tuple[bool, bool, float, float]] = {
    "sigmoid": (False, False, 0.0, 0.0),
    "tanh": (False, False, 0.0, 0.0),
    "relu": (False, False, 0.0, 0.0),
    "softsign": (False, False, 0.0, 0.0),
    "softplus": (False, False, 0.0, 0.0),
    "affine": (True, True, 0.0, 0.0),
    "leakyrelu": (True, False, 0.01, 0.0),
    "thresholdedrelu": (True, False, 0.0, 0.0),
    "scaledtanh": (True, True, 0.0, 0.0),
    "hardsigmoid": (True, True, 0.2, 0.5),
    "elu": (True, False, 1.0, 0.0),
}


@dataclass(frozen=True)
class Activation:
    """One activation function of a recurrent node, with its alpha and beta."""

    name: str
    alpha: float = 0.0
    beta: float = 0.0


@dataclass
class Recurrence:
    """What LSTM, GRU and RNN share: sizes, directions, layout, activations and input X.

    `x` is the input flattened to [seq * batch, input] in time-major order.
    """

    ctx: NodeContext
    seq: int
    batch: int
    hidden: int
    reverse: list[bool]
    layout: int
    clip: float | None
    activations: list[list[Activation]]
    x: SSAValue

    # ---------------------------------------------------------------- tensor algebra

    def ssa(self, value: Tensor) -> SSAValue:
        return self.ctx.constant(value) if isinstance(value, np.ndarray) else value

    def add(self, a: Tensor, b: Tensor) -> Tensor:
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return (a + b).astype(np.float32)
        return self.ctx.emit(nn.AddOp, [self.ssa(a), self.ssa(b)])

    def sub(self, a: Tensor, b: Tensor) -> Tensor:
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return (a - b).astype(np.float32)
        return self.ctx.emit(nn.SubOp, [self.ssa(a), self.ssa(b)])

    def mul(self, a: Tensor, b: Tensor) -> Tensor:
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return (a * b).astype(np.float32)
        return self.ctx.emit(nn.MulOp, [self.ssa(a), self.ssa(b)])

    def part(self, value: Tensor, axis: int, start: int, stop: int) -> Tensor:
        """value[..., start:stop, ...] along `axis`."""
        if isinstance(value, np.ndarray):
            index = [slice(None)] * value.ndim
            index[axis] = slice(start, stop)
            return np.ascontiguousarray(value[tuple(index)])
        shape = shape_of(value)
        if (start, stop) == (0, shape[axis]):
            return value
        starts = [start if i == axis else 0 for i in range(len(shape))]
        ends = [stop if i == axis else d for i, d in enumerate(shape)]
        props = {
            "starts": nn.ints(starts),
            "ends": nn.ints(ends),
            "steps": nn.ints([1] * len(shape)),
        }
        return self.ctx.emit(nn.SliceOp, [value], props)

    def pick(self, value: Tensor, axis: int, index: int) -> Tensor:
        """value[..., index, ...]: `axis` removed."""
        if isinstance(value, np.ndarray):
            return np.take(value, index, axis=axis)
        piece = self.part(value, axis, index, index + 1)
        shape = list(shape_of(piece))
        del shape[axis]
        return self.ctx.reshape(piece, shape)

    def split(self, value: SSAValue, axis: int, pieces: int) -> list[SSAValue]:
        """`value` cut into `pieces` equal parts along `axis`."""
        if pieces == 1:
            return [value]
        shape = list(shape_of(value))
        shape[axis] //= pieces
        types = [TensorType(f32, shape)] * pieces
        op = self.ctx.emit_op(nn.SplitOp, [value], {"axis": i64_attr(axis)}, result_types=types)
        return list(op.results)

    def concat(self, values: Sequence[SSAValue], axis: int) -> SSAValue:
        if len(values) == 1:
            return values[0]
        return self.ctx.emit(nn.ConcatOp, list(values), {"axis": i64_attr(axis)})

    def fc(self, x: SSAValue, weight: Tensor, bias: Tensor | None) -> SSAValue:
        operands = [x, self.ssa(weight), None if bias is None else self.ssa(bias)]
        return self.ctx.emit(nn.FullyConnectedOp, operands)

    def clipped(self, value: Tensor) -> SSAValue:
        value = self.ssa(value)
        if self.clip is None:
            return value
        props = {"min": f32_attr(-self.clip), "max": f32_attr(self.clip)}
        return self.ctx.emit(nn.ClipOp, [value], props)

    def activate(self, act: Activation, value: Tensor, clip: bool = True) -> SSAValue:
        """act(value); `clip` bounds a gate's input first (not the cell state's)."""
        return _ACTIVATE[act.name](self, act, self.clipped(value) if clip else self.ssa(value))

    # ---------------------------------------------------------------- node inputs

    def direction(self, i: int, d: int) -> Tensor | None:
        """Input i's slice for direction d (W, R, B, P: axis 0), or None if absent."""
        if not self.ctx.has(i):
            return None
        value = self.ctx.const(i)
        if value is not None:
            return np.asarray(value, np.float32)[d]
        return self.pick(self.ctx.operand(i), 0, d)

    def state(self, i: int, d: int) -> SSAValue | None:
        """An initial state's [batch, hidden] for direction d; None when absent or zero."""
        if not self.ctx.has(i):
            return None
        value = self.ctx.const(i)
        if value is not None and not np.any(value):
            return None
        source = self.ctx.operand(i) if value is None else np.asarray(value, np.float32)
        return self.ssa(self.pick(source, 1 if self.layout else 0, d))

    def summed_bias(self, b: Tensor | None, width: int) -> Tensor | None:
        """Wb + Rb from a direction's B = [Wb, Rb] of `width` each."""
        return (
            None
            if b is None
            else self.add(self.part(b, 0, 0, width), self.part(b, 0, width, 2 * width))
        )

    def projected(self, w: Tensor, bias: Tensor | None) -> list[SSAValue]:
        """X·Wᵀ + bias for every step, as seq tensors [batch, gates]."""
        return self.split(self.fc(self.x, w, bias), 0, self.seq)

    def order(self, d: int) -> list[int]:
        return list(reversed(range(self.seq))) if self.reverse[d] else list(range(self.seq))

    # ---------------------------------------------------------------- outputs

    def sequence_output(self, outputs: list[list[SSAValue]]) -> SSAValue:
        """Y from each direction's hidden states in time order."""
        per_direction = []
        for hs in outputs:
            joined = self.concat(hs, 0)
            per_direction.append(self.ctx.reshape(joined, (self.seq, 1, self.batch, self.hidden)))
        y = self.concat(per_direction, 1)
        return self.ctx.transpose(y, [2, 0, 1, 3]) if self.layout else y

    def state_output(self, finals: list[SSAValue]) -> SSAValue:
        """Y_h or Y_c from each direction's last state."""
        shaped = [self.ctx.reshape(s, (1, self.batch, self.hidden)) for s in finals]
        y = self.concat(shaped, 0)
        return self.ctx.transpose(y, [1, 0, 2]) if self.layout else y


def _sigmoid(r: Recurrence, act: Activation, x: SSAValue) -> SSAValue:
    return r.ctx.emit(nn.SigmoidOp, [x])


def _tanh(r: Recurrence, act: Activation, x: SSAValue) -> SSAValue:
    return r.ctx.emit(nn.TanhOp, [x])


def _relu(r: Recurrence, act: Activation, x: SSAValue) -> SSAValue:
    return r.ctx.emit(nn.ReluOp, [x])


def _softplus(r: Recurrence, act: Activation, x: SSAValue) -> SSAValue:
    return r.ctx.emit(nn.SoftplusOp, [x])


def _softsign(r: Recurrence, act: Activation, x: SSAValue) -> SSAValue:
    denominator = r.add(r.ctx.emit(nn.AbsOp, [x]), np.array(1.0, np.float32))
    return r.ctx.emit(nn.DivOp, [x, r.ssa(denominator)])


def _affine(r: Recurrence, act: Activation, x: SSAValue) -> SSAValue:
    scaled = r.mul(x, np.array(act.alpha, np.float32))
    return r.ssa(r.add(scaled, np.array(act.beta, np.float32)))


def _leaky_relu(r: Recurrence, act: Activation, x: SSAValue) -> SSAValue:
    return r.ctx.emit(nn.LeakyReluOp, [x], {"alpha": f32_attr(act.alpha)})


def _thresholded_relu(r: Recurrence, act: Activation, x: SSAValue) -> SSAValue:
    above = r.ctx.emit(nn.GreaterOp, [x, r.ssa(np.array(act.alpha, np.float32))], element_type=i1)
    return r.ctx.emit(nn.WhereOp, [above, x, r.ssa(np.array(0.0, np.float32))])


def _scaled_tanh(r: Recurrence, act: Activation, x: SSAValue) -> SSAValue:
    inner = r.ctx.emit(nn.TanhOp, [r.ssa(r.mul(x, np.array(act.beta, np.float32)))])
    return r.ssa(r.mul(inner, np.array(act.alpha, np.float32)))


def _hard_sigmoid(r: Recurrence, act: Activation, x: SSAValue) -> SSAValue:
    props = {"alpha": f32_attr(act.alpha), "beta": f32_attr(act.beta)}
    return r.ctx.emit(nn.HardSigmoidOp, [x], props)


def _elu(r: Recurrence, act: Activation, x: SSAValue) -> SSAValue:
    return r.ctx.emit(nn.EluOp, [x], {"alpha": f32_attr(act.alpha)})


_ACTIVATE: dict[str, Callable[[Recurrence, Activation, SSAValue], SSAValue]] = {
    "sigmoid": _sigmoid,
    "tanh": _tanh,
    "relu": _relu,
    "softplus": _softplus,
    "softsign": _softsign,
    "affine": _affine,
    "leakyrelu": _leaky_relu,
    "thresholdedrelu": _thresholded_relu,
    "scaledtanh": _scaled_tanh,
    "hardsigmoid": _hard_sigmoid,
    "elu": _elu,
}


def _activations(
    ctx: NodeContext, defaults: Sequence[str], directions: int
) -> list[list[Activation]]:
    """Each direction's activation functions, alphas and betas read as onnxruntime does."""
    names = [str(n) for n in ctx.attr("activations", [])] or list(defaults) * directions
    if len(names) != len(defaults) * directions:
        raise ValueError(
            f"activations lists {len(names)} functions, expected {len(defaults) * directions}"
        )
    alphas = [float(a) for a in ctx.attr("activation_alpha", [])]
    betas = [float(b) for b in ctx.attr("activation_beta", [])]
    result = []
    for name in names:
        key = name.lower()
        if key not in _ACTIVATION_ARGS:
            raise Unsupported(f"activation '{name}' not supported")
        takes_alpha, takes_beta, alpha, beta = _ACTIVATION_ARGS[key]
        if takes_alpha and alphas:
            alpha = alphas.pop(0)
        if takes_beta and betas:
            beta = betas.pop(0)
        result.append(Activation(key, alpha, beta))
    n = len(defaults)
    return [result[d * n : (d + 1) * n] for d in range(directions)]


def _recurrence(ctx: NodeContext, gates: int, defaults: Sequence[str]) -> Recurrence:
    """Check a recurrent node's shapes and attributes and flatten its input X."""
    layout = int(ctx.attr("layout", 0))
    if layout not in (0, 1):
        raise ValueError(f"layout must be 0 or 1, got {layout}")
    x_shape, w_shape, r_shape = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    if len(x_shape) != 3:
        raise ValueError(f"X must have rank 3, got shape {list(x_shape)}")
    seq, batch, size = (x_shape[1], x_shape[0], x_shape[2]) if layout else x_shape
    direction = ctx.attr("direction", "forward")
    reverse = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}.get(direction)
    if reverse is None:
        raise ValueError(f"unknown direction '{direction}'")
    dirs = len(reverse)
    hidden = int(ctx.attr("hidden_size", r_shape[-1] if len(r_shape) == 3 else 0))
    if tuple(w_shape) != (dirs, gates * hidden, size):
        raise ValueError(f"W must have shape {[dirs, gates * hidden, size]}, got {list(w_shape)}")
    if tuple(r_shape) != (dirs, gates * hidden, hidden):
        raise ValueError(f"R must have shape {[dirs, gates * hidden, hidden]}, got {list(r_shape)}")
    if ctx.has(3) and tuple(ctx.shape(3)) != (dirs, 2 * gates * hidden):
        raise ValueError(f"B must have shape {[dirs, 2 * gates * hidden]}, got {ctx.shape(3)}")
    if gates == 4 and ctx.has(7) and tuple(ctx.shape(7)) != (dirs, 3 * hidden):
        raise ValueError(f"P must have shape {[dirs, 3 * hidden]}, got {list(ctx.shape(7))}")
    state = [batch, dirs, hidden] if layout else [dirs, batch, hidden]
    for i in (5, 6) if gates == 4 else (5,):
        if ctx.has(i) and list(ctx.shape(i)) != state:
            raise ValueError(f"initial states must have shape {state}, got {list(ctx.shape(i))}")
    if ctx.has(4):
        lengths = ctx.need_const(4, "sequence_lens")
        if np.any(lengths.reshape(-1) != seq):
            raise Unsupported(
                f"sequence_lens {lengths.reshape(-1).tolist()} other than the full length {seq}"
            )
    clip = ctx.attr("clip")
    x = ctx.operand(0)
    if layout:
        x = ctx.transpose(x, [1, 0, 2])
    x = ctx.reshape(x, (seq * batch, size))
    acts = _activations(ctx, defaults, dirs)
    return Recurrence(ctx, seq, batch, hidden, reverse, layout, clip, acts, x)


def _outputs(
    ctx: NodeContext, r: Recurrence, hs: list[list[SSAValue]], finals: list[list[SSAValue]]
) -> list[Value | None]:
    """[Y, Y_h, (Y_c)] for the outputs the graph uses."""
    results: list[Value | None] = [r.sequence_output(hs) if ctx.output_used(0) else None]
    for k, states in enumerate(finals, start=1):
        results.append(r.state_output(states) if ctx.output_used(k) else None)
    return results


def _lstm(ctx: NodeContext) -> list[Value | None]:
    r = _recurrence(ctx, 4, ("Sigmoid", "Tanh", "Tanh"))
    coupled = bool(ctx.attr("input_forget", 0))
    h_size = r.hidden
    hs_all, h_last, c_last = [], [], []
    for d in range(len(r.reverse)):
        f_act, g_act, h_act = r.activations[d]
        w, rec, b, p = (r.direction(i, d) for i in (1, 2, 3, 7))
        bias = r.summed_bias(b, 4 * h_size)
        peep = [None if p is None else r.part(p, 0, k * h_size, (k + 1) * h_size) for k in range(3)]
        steps = r.projected(w, bias)
        h, c = r.state(5, d), r.state(6, d)
        hs: dict[int, SSAValue] = {}
        for t in r.order(d):
            gates = steps[t] if h is None else r.ssa(r.add(steps[t], r.fc(h, rec, None)))
            gi, go, gf, gc = r.split(gates, 1, 4)
            if c is not None and peep[0] is not None:
                gi = r.add(gi, r.mul(c, peep[0]))
            i = r.activate(f_act, gi)
            if coupled:
                f = r.sub(np.array(1.0, np.float32), i)
            elif c is not None and peep[2] is not None:
                f = r.activate(f_act, r.add(gf, r.mul(c, peep[2])))
            else:
                f = r.activate(f_act, gf)
            update = r.mul(i, r.activate(g_act, gc))
            c = r.ssa(update if c is None else r.add(r.mul(f, c), update))
            if peep[1] is not None:
                go = r.add(go, r.mul(c, peep[1]))
            h = r.ssa(r.mul(r.activate(f_act, go), r.activate(h_act, c, clip=False)))
            hs[t] = h
        hs_all.append([hs[t] for t in range(r.seq)])
        h_last.append(h)
        c_last.append(c)
    return _outputs(ctx, r, hs_all, [h_last, c_last])


def _gru(ctx: NodeContext) -> list[Value | None]:
    r = _recurrence(ctx, 3, ("Sigmoid", "Tanh"))
    before_reset = bool(ctx.attr("linear_before_reset", 0))
    n = r.hidden
    hs_all, h_last = [], []
    for d in range(len(r.reverse)):
        f_act, g_act = r.activations[d]
        w, rec, b = (r.direction(i, d) for i in (1, 2, 3))
        if b is not None and before_reset:
            # Rbh sits inside r * (H·Rhᵀ + Rbh): only Rbz and Rbr join the input bias.
            wb, rb = r.part(b, 0, 0, 3 * n), r.part(b, 0, 3 * n, 6 * n)
            keep = np.repeat(np.array([1, 1, 0], np.float32), n)
            bias, rec_bias = r.add(wb, r.mul(rb, keep)), r.mul(rb, 1 - keep)
        else:
            bias, rec_bias = r.summed_bias(b, 3 * n), None
        steps = r.projected(w, bias)
        h = r.state(5, d)
        hs: dict[int, SSAValue] = {}
        for t in r.order(d):
            xz, xr, xh = r.split(steps[t], 1, 3)
            if h is None:
                z, reset = r.activate(f_act, xz), r.activate(f_act, xr)
                pre = xh
                if before_reset and rec_bias is not None:
                    pre = r.add(xh, r.mul(reset, r.part(rec_bias, 0, 2 * n, 3 * n)))
                candidate = r.activate(g_act, pre)
                h = r.ssa(r.sub(candidate, r.mul(z, candidate)))
            else:
                if before_reset:
                    hz, hr, hh = r.split(r.fc(h, rec, rec_bias), 1, 3)
                else:
                    hz, hr = r.split(r.fc(h, r.part(rec, 0, 0, 2 * n), None), 1, 2)
                z = r.activate(f_act, r.add(xz, hz))
                reset = r.activate(f_act, r.add(xr, hr))
                if before_reset:
                    pre = r.add(xh, r.mul(reset, hh))
                else:
                    pre = r.add(
                        xh, r.fc(r.ssa(r.mul(reset, h)), r.part(rec, 0, 2 * n, 3 * n), None)
                    )
                candidate = r.activate(g_act, pre)
                h = r.ssa(r.add(candidate, r.mul(z, r.sub(h, candidate))))
            hs[t] = h
        hs_all.append([hs[t] for t in range(r.seq)])
        h_last.append(h)
    return _outputs(ctx, r, hs_all, [h_last])


def _rnn(ctx: NodeContext) -> list[Value | None]:
    r = _recurrence(ctx, 1, ("Tanh",))
    hs_all, h_last = [], []
    for d in range(len(r.reverse)):
        (f_act,) = r.activations[d]
        w, rec, b = (r.direction(i, d) for i in (1, 2, 3))
        bias = r.summed_bias(b, r.hidden)
        steps = r.projected(w, bias)
        h = r.state(5, d)
        hs: dict[int, SSAValue] = {}
        for t in r.order(d):
            pre = steps[t] if h is None else r.add(steps[t], r.fc(h, rec, None))
            h = hs[t] = r.activate(f_act, pre)
        hs_all.append([hs[t] for t in range(r.seq)])
        h_last.append(h)
    return _outputs(ctx, r, hs_all, [h_last])


CONVERTERS: dict[str, Converter] = {
    "RNN": _rnn,
    "LSTM": _lstm,
    "GRU": _gru,
}
