"""Runs an NPU `Program` on numpy: one byte arena per region, instructions on strided views.

`Executor(program)` prepares once: the constants arena, a numpy view of every
operand, and for each conv2d / matmul / lut whose weights, parameter table or
table are constants (read in the constants region, or a DMA copy of them that
nothing overwrote since) the decoded table and the centred GEMM weights; such a
conv2d is planned into its numpy calls (npu_conv.conv2d_plan, docs/runtime.md).
`run(inputs)` zeroes the writable arenas, writes the inputs at their I/O
descriptors, runs the instructions in program order and reads the outputs back;
without an observer it follows the fast schedule of runtime/fusion.py (runs of
conv2d tiles as one convolution, no DMAs whose bytes nothing reads).
Results are bit-exact with the `qnn` reference semantics (runtime/npu_conv.py,
npu_requant.py, npu_kernels.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from functools import partial

import numpy as np

from npuc import integer
from npuc.diagnostics import InputError, NpucError, note_context
from npuc.dialects import npu_isa as isa
from npuc.plugins import PluginError

from . import fusion, npu_jit
from . import npu_conv as nc
from . import npu_gemm as ng
from . import npu_kernels as nk
from . import npu_requant as nr

Step = Callable[[], None]
#: Called after each instruction with its index, the instruction and the views it wrote
#: (live views of the arenas: copy them to keep them, e.g. to dump intermediate tensors).
Observer = Callable[[int, isa.Instruction, tuple[np.ndarray, ...]], None]


def numpy_dtype(dtype: str) -> np.dtype:
    return np.dtype(isa.DTYPES[dtype][1])


class _Copies:
    """Which views of writable regions hold a DMA copy of constants (still unchanged)."""

    def __init__(self) -> None:
        self.copies: list[tuple[isa.TensorRef, isa.TensorRef]] = []  # (dst, constant src)

    def resolve(self, t: isa.TensorRef) -> isa.TensorRef | None:
        """The same elements as a view of the constants region, if they are known constants."""
        if t.region == "constants":
            return t
        for dst, src in reversed(self.copies):
            if dst.region != t.region:
                continue
            if dst.offset == t.offset and dst.shape == t.shape and dst.strides == t.strides:
                return replace(src, dtype=t.dtype) if src.dtype == t.dtype else None
            contiguous = dst.is_contiguous() and src.is_contiguous()
            if contiguous and dst.offset <= t.offset and t.end <= dst.end:
                return replace(t, region="constants", offset=src.offset + t.offset - dst.offset)
        return None

    def wrote(self, t: isa.TensorRef) -> None:
        self.copies = [(d, s) for d, s in self.copies if d.apart_from(t)]

    def dma(self, src: isa.TensorRef, dst: isa.TensorRef) -> None:
        constant = self.resolve(src)
        self.wrote(dst)
        if constant is not None:
            self.copies.append((dst, constant))


#: A step as `_shared_inputs` sees it: the input it reads if it is a pointwise conv2d, and
#: the views it writes.
Reader = tuple[isa.TensorRef | None, tuple[isa.TensorRef, ...]]


def _pointwise_inputs(instructions: Sequence[isa.Instruction]) -> list[Reader]:
    pointwise = [inst.op == "conv2d" and nc.pointwise(_geometry(inst)) for inst in instructions]
    return [
        (inst.operands[0] if p else None, inst.written())
        for inst, p in zip(instructions, pointwise, strict=True)
    ]


def _shared_inputs(steps: Sequence[Reader]) -> dict[int, tuple[isa.TensorRef, bool]]:
    """The pointwise convolutions that read an input an earlier one read too, with none of
    its bytes written in between, by step index: (the input, whether an earlier one
    converted it already). The first of each such run converts the input into a float32
    buffer of its own; the others reuse it."""
    shared: dict[int, tuple[isa.TensorRef, bool]] = {}
    first: dict[isa.TensorRef, int] = {}  # an input -> the first reader since it changed
    for index, (x, written) in enumerate(steps):
        if x is not None:
            if x in first:
                shared[first[x]] = (x, False)
                shared[index] = (x, True)
            else:
                first[x] = index
        for t in written:
            first = {x: i for x, i in first.items() if x.apart_from(t)}
    return shared


def _geometry(inst: isa.Instruction) -> nc.ConvGeometry:
    """A conv2d instruction's geometry."""
    _, w, _, ofm = inst.operands
    p = dict(inst.params)
    return nc.ConvGeometry(
        p["strides"],
        p["pads"],
        p["dilations"],
        p["groups"],
        w.shape[2:],
        ofm.shape[2:],
        depthwise=w.shape[1] == 1 and p["groups"] > 1,
    )


def _blas_threads(threads: int | None) -> Callable[[], AbstractContextManager]:
    """A context limiting BLAS to `threads` (None: leave it), if threadpoolctl is installed.

    One thread is the default: the GEMMs are small, and OpenBLAS spinning threads on a
    loaded machine cost far more than they bring.
    """
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return nullcontext
    if threads is None:
        return nullcontext
    controller = ThreadpoolController()
    return lambda: controller.limit(limits=threads, user_api="blas")


UFUNC_BUFFER = 1024


@contextmanager
def _ufunc_buffer(size: int) -> Iterator[None]:
    """numpy's ufunc buffer size for the block: rows at least this long take numpy's fast
    loops when a per-channel constant broadcasts along them or a dtype is converted (the
    default, 8192 elements, leaves most convolution rows on the slow path)."""
    old = np.setbufsize(size)
    try:
        yield
    finally:
        np.setbufsize(old)


class Executor:
    """Executes one program; `run` may be called many times (not from several threads)."""

    def __init__(self, program: isa.Program, *, threads: int | None = 1) -> None:
        self.program = program
        self._limit = _blas_threads(threads)
        self.scratch = nr.Scratch()
        self._eltwise_tables: dict[tuple, np.ndarray | None] = {}
        self.arenas: dict[str, np.ndarray] = {}
        for region in program.regions:
            arena = np.zeros(region.size, np.uint8)
            if region.kind == "constants":
                arena[: len(program.constants)] = np.frombuffer(program.constants, np.uint8)
                arena.flags.writeable = False
            self.arenas[region.kind] = arena
        self._inputs = {d.name: (d, self.view(d.tensor)) for d in program.inputs}
        self._outputs = [(d, self.view(d.tensor)) for d in program.outputs]
        copies = _Copies()
        self._shared = _shared_inputs(_pointwise_inputs(program.instructions))
        # per instruction: the roles its step takes from constants, and for a planned
        # conv2d those constants (weights, bias_scale)
        self._frozen: dict[int, tuple[str, ...]] = {}
        self._conv_constants: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._steps: list[tuple[Step, tuple[np.ndarray, ...]]] = []
        for index, inst in enumerate(program.instructions):
            try:
                step = self._prepare(inst, copies, index)
            except PluginError:  # names the plugin and its op already
                raise
            except NpucError as e:
                raise NpucError(f"instruction {index} ({inst.op}): {e.message}") from None
            self._steps.append((step, tuple(self.view(t) for t in inst.written())))
            if inst.op == "dma":
                copies.dma(*inst.operands)
            else:
                for t in inst.written():
                    copies.wrote(t)
        self._schedule = self._fast_schedule()

    # ------------------------------------------------------------------ views

    def view(self, t: isa.TensorRef) -> np.ndarray:
        """The elements of `t` as a numpy view of its region's arena."""
        size = t.itemsize
        return np.ndarray(
            t.shape,
            numpy_dtype(t.dtype),
            buffer=self.arenas[t.region],
            offset=t.offset,
            strides=tuple(s * size for s in t.strides),
        )

    def _constant(self, t: isa.TensorRef, copies: _Copies) -> np.ndarray | None:
        source = copies.resolve(t)
        return None if source is None else self.view(source)

    # ------------------------------------------------------------------ running

    def run(
        self, inputs: Mapping[str, np.ndarray], observe: Observer | None = None
    ) -> dict[str, np.ndarray]:
        """Outputs (stored values) by name; inputs take stored values, or floats to quantize."""
        unknown = sorted(set(inputs) - set(self._inputs))
        if unknown:
            raise NpucError(
                f"unknown input(s) {', '.join(unknown)} (inputs: {', '.join(self._inputs)})"
            )
        self._load(inputs)
        with self._limit(), _ufunc_buffer(UFUNC_BUFFER):
            if observe is None:
                self._execute(self._schedule)
            else:
                self._execute(self._observed(observe))
        return {d.name: view.copy() for d, view in self._outputs}

    def _load(self, inputs: Mapping[str, np.ndarray]) -> None:
        for kind, arena in self.arenas.items():
            if kind != "constants":
                arena.fill(0)
        for name, (desc, view) in self._inputs.items():
            if name not in inputs:
                raise NpucError(f"missing input '{name}'")
            view[...] = _stored_input(desc, np.asarray(inputs[name]))

    def timed_run(
        self, inputs: Mapping[str, np.ndarray]
    ) -> list[tuple[tuple[int, ...], Step, float]]:
        """`run` without an observer, timing each numpy or compiled call of the fast
        schedule on its own: (the instructions of its step, the call, seconds), in order
        (runtime/host_time.py sums them by kind)."""
        self._load(inputs)
        clock = time.perf_counter
        times: list[tuple[tuple[int, ...], Step, float]] = []
        with self._limit(), _ufunc_buffer(UFUNC_BUFFER):
            for step, indices in self._schedule:
                plan = step.plan() if isinstance(step, _Deferred) else step
                calls = plan.args[0] if isinstance(plan, partial) and plan.func is _run else [plan]
                for call in calls:
                    start = clock()
                    call()
                    times.append((indices, call, clock() - start))
        return times

    def _observed(self, observe: Observer) -> Iterator[tuple[Step, tuple[int, ...]]]:
        """Every instruction's step, the observer called after each."""
        for index, (step, written) in enumerate(self._steps):
            inst = self.program.instructions[index]

            def observed(step=step, index=index, inst=inst, written=written) -> None:
                step()
                observe(index, inst, written)

            yield observed, (index,)

    def _execute(self, schedule: Iterable[tuple[Step, tuple[int, ...]]]) -> None:
        for step, indices in schedule:
            try:
                step()
            except PluginError:
                raise
            except (NotImplementedError, NpucError) as e:  # the others are bugs
                inst = self.program.instructions[indices[0]]
                which = (
                    f"instruction {indices[0]}"
                    if len(indices) == 1
                    else f"instructions {indices[0]}-{indices[-1]}"
                )
                message = e.message if isinstance(e, NpucError) else str(e)
                raise NpucError(f"{which} ({inst.op}): {message}") from None
            except Exception as e:
                inst = self.program.instructions[indices[0]]
                layer = "" if inst.layer is None else f", layer '{self.program.layers[inst.layer]}'"
                note_context(e, "instruction", f"{indices[0]} ({inst.op}{layer})")
                raise

    def _fast_schedule(self) -> list[tuple[Step, tuple[int, ...]]]:
        """The steps `run` takes without an observer (runtime/fusion.py): tile runs as one
        step at their last tile, no dead DMAs, the other instructions' own steps."""
        instructions = self.program.instructions
        runs = fusion.tile_runs(self.program, self._frozen, self._same_constants)
        dead = fusion.dead_dmas(self.program, self._frozen)
        at_last = {run.members[-1]: run for run in runs}
        folded = {i for run in runs for i in run.members}
        units: list[fusion.TileRun | int] = [
            at_last.get(i, i)
            for i in range(len(instructions))
            if i in at_last or (i not in folded and i not in dead)
        ]
        readers: list[Reader] = []
        for unit in units:
            if isinstance(unit, fusion.TileRun):
                pointwise = nc.pointwise(_geometry(instructions[unit.members[0]]))
                readers.append((unit.ifm if pointwise else None, (unit.ofm,)))
            else:
                readers += _pointwise_inputs([instructions[unit]])
        shared = _shared_inputs(readers)
        schedule: list[tuple[Step, tuple[int, ...]]] = []
        for position, unit in enumerate(units):
            if isinstance(unit, fusion.TileRun):
                try:
                    step = self._tile_run_step(unit, shared.get(position))
                except NpucError as e:
                    first, last = unit.members[0], unit.members[-1]
                    raise NpucError(f"instructions {first}-{last} (conv2d): {e.message}") from None
                schedule.append((step, unit.members))
            elif shared.get(position) != self._shared.get(unit):  # converts or reuses otherwise
                schedule.append((self._conv2d_step(unit, shared.get(position)), (unit,)))
            else:
                step = self._steps[unit][0]
                if isinstance(step, _Deferred):
                    step.plan()
                schedule.append((step, (unit,)))
        return schedule

    def _same_constants(self, i: int, j: int) -> bool:
        a, b = self._conv_constants[i], self._conv_constants[j]
        return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))

    def _tile_run_step(self, run: fusion.TileRun, converted: tuple[object, bool] | None) -> Step:
        """One conv2d over the union of the run's tiles, from their constants."""
        first = self.program.instructions[run.members[0]]
        parts = [self._conv_constants[i] for i in run.members]
        if run.axis == fusion.ROWS:
            weights, rows = parts[0]
        else:
            weights, rows = (np.concatenate(arrays) for arrays in zip(*parts, strict=True))
        p = first.params
        geo = nc.ConvGeometry(
            p["strides"],
            p["pads"],
            p["dilations"],
            run.ifm.shape[1] if run.depthwise else 1,
            first.operands[1].shape[2:],
            run.ofm.shape[2:],
            run.depthwise,
        )
        actions = self._conv2d_actions(
            first, geo, self.view(run.ifm), self.view(run.ofm), weights, rows, converted
        )
        return _sequence(actions)

    # ------------------------------------------------------------------ preparation

    def _prepare(self, inst: isa.Instruction, copies: _Copies, index: int) -> Step:
        p = dict(inst.params)
        views = [self.view(t) for t in inst.operands]
        if inst.op == "dma":
            src, dst = views
            return lambda: np.copyto(dst, src)
        if inst.op == "conv2d":
            return self._conv2d(inst, copies, index)
        if inst.op == "matmul":
            return self._matmul(inst, p, views, copies, index)
        if inst.op == "pool":
            compiled = npu_jit.average_action(views[0], p, views[1])
            if compiled is not None:
                return compiled
            return lambda: nk.pool(views[0], p, views[1])
        if inst.op == "eltwise":
            table = self._eltwise_table(p, views)
            if table is not None:
                compiled = npu_jit.lookup_action(views[0], views[1], table, views[2])
                if compiled is not None:
                    return compiled
                return lambda: nk.eltwise_lookup(views[0], views[1], table, views[2])
            return lambda: nk.eltwise(views[0], views[1], p, views[2])
        if inst.op == "lut":
            static = self._constant(inst.operand("table"), copies)
            if static is not None:
                self._frozen[index] = ("table",)
            table = views[1] if static is None else np.ascontiguousarray(static)
            return lambda: nk.lut(views[0], table, p["table_base"], views[2])
        if inst.op == "softmax":
            softmax = nk.Softmax(p["input_multiplier"], p["input_left_shift"], p["diff_min"])
            return partial(softmax, views[0], views[1])
        if inst.op == "move":
            return lambda: nk.move(views[0], p, views[1])
        if inst.op == "host":
            from .host import host_step

            return host_step(inst, views)
        raise NpucError(f"no kernel for instruction '{inst.op}'")

    def _eltwise_table(self, p: dict, views: list[np.ndarray]) -> np.ndarray | None:
        """The 8-bit eltwise lookup table for these parameters, built once per program."""
        dtypes = tuple(v.dtype for v in views)
        key = (dtypes, tuple(sorted((k, repr(v)) for k, v in p.items())))
        if key not in self._eltwise_tables:
            self._eltwise_tables[key] = nk.eltwise_table(dtypes[0], dtypes[1], p, dtypes[2])
        return self._eltwise_tables[key]

    def _table(
        self, inst: isa.Instruction, p: dict, weights: str, copies: _Copies
    ) -> Callable[[], nr.Table]:
        t = inst.operand("bias_scale")
        wrange = isa.dtype_range(inst.operand(weights).dtype)
        static = self._constant(t, copies)
        if static is not None:
            table = nr.Table.decode(static, wrange, p["rounding"])
            return lambda: table
        view = self.view(t)
        return lambda: nr.Table.decode(view, wrange, p["rounding"])

    def _conv2d(self, inst: isa.Instruction, copies: _Copies, index: int) -> Step:
        """Planned once from the constants when the weights and table are constants (when
        it first runs: the fast schedule may run it within a tile run instead; its table
        is checked now), else planned again at every run from the bytes they hold."""
        static = [self._constant(inst.operand(r), copies) for r in ("weights", "bias_scale")]
        if static[0] is None or static[1] is None:
            return self._conv2d_step(index, self._shared.get(index))
        self._frozen[index] = ("weights", "bias_scale")
        self._conv_constants[index] = (static[0], static[1])
        nr.Table.decode(
            static[1], isa.dtype_range(inst.operand("weights").dtype), inst.params["rounding"]
        )
        return _Deferred(partial(self._conv2d_step, index, self._shared.get(index)))

    def _conv2d_step(self, index: int, converted: tuple[object, bool] | None) -> Step:
        """A conv2d's step: its numpy calls planned once from its constants, or, weights
        or table not constant, planned at every run from the bytes they hold."""
        inst = self.program.instructions[index]
        x, w, rows, out = (self.view(t) for t in inst.operands)
        geo = _geometry(inst)
        if index not in self._conv_constants:
            return lambda: _run(self._conv2d_actions(inst, geo, x, out, w, rows, converted))
        weights, rows = self._conv_constants[index]
        return _sequence(self._conv2d_actions(inst, geo, x, out, weights, rows, converted))

    def _conv2d_actions(
        self,
        inst: isa.Instruction,
        geo: nc.ConvGeometry,
        x: np.ndarray,
        out: np.ndarray,
        weights: np.ndarray,
        rows: np.ndarray,
        converted: tuple[object, bool] | None,
    ) -> list[nr.Action]:
        """The numpy calls of a conv2d with these parameters, views and weights and table."""
        p = inst.params
        wrange = isa.dtype_range(inst.operand("weights").dtype)
        table = nr.Table.decode(rows, wrange, p["rounding"])
        zp, clamp = p["ifm_zero_point"], (p["clamp_min"], p["clamp_max"])
        operand = nc.conv_weights(weights, table.weight_zero_point, geo)
        bias = table.bias - zp * operand.sums.reshape(-1)  # the input zero point, folded in
        stage = nr.OutputStage(
            table,
            bias,
            p["rounding"],
            p["ofm_zero_point"],
            clamp,
            nc.channels_first(geo, out.shape[1]),
        )
        return nc.conv2d_plan(x, out, zp, operand, stage, geo, self.scratch, converted)

    def _matmul(
        self, inst: isa.Instruction, p: dict, views: list, copies: _Copies, index: int
    ) -> Step:
        rhs = inst.operand("rhs")
        table = self._table(inst, p, "rhs", copies)

        def centred_rhs(values: np.ndarray, t: nr.Table) -> ng.Operand:
            if rhs.strides[0] == 0:
                values = values[:1]
            return ng.Operand.of(values.astype(np.int64) - t.weight_zero_point)

        lhs, out = views[0], views[3]
        zp, clamp, k = p["lhs_zero_point"], (p["clamp_min"], p["clamp_max"]), rhs.shape[1]

        def plan(values: np.ndarray, t: nr.Table) -> list[nr.Action]:
            w = centred_rhs(values, t)
            peak = ng.storage_peak(lhs.dtype)
            gemm, acc, bound = ng.gemm_actions(lhs, peak, w, k, self.scratch)
            bias = t.bias - zp * w.sums[:, None, :]  # lhs zero point folded into the bias
            stage = nr.OutputStage(t, bias, p["rounding"], p["ofm_zero_point"], clamp)
            return gemm + stage.actions(acc, bound, out, self.scratch)

        static = self._constant(rhs, copies)
        if static is not None and self._constant(inst.operand("bias_scale"), copies) is not None:
            self._frozen[index] = ("rhs", "bias_scale")
            return _sequence(plan(static, table()))
        return lambda: _run(plan(views[1], table()))


class _Deferred:
    """A step planned when it first runs, or when `plan` is called: the tiles the fast
    schedule runs as one are planned on their own only for an observer."""

    def __init__(self, planner: Callable[[], Step]) -> None:
        self._planner, self._step = planner, None

    def plan(self) -> Step:
        if self._step is None:
            self._step = self._planner()
        return self._step

    def __call__(self) -> None:
        self.plan()()


def _run(actions: Iterable[nr.Action]) -> None:
    for action in actions:
        action()


def _sequence(actions: list[nr.Action]) -> Step:
    """A step running these numpy calls in order."""
    return partial(_run, actions)


def run_with_dump(
    executor: Executor, inputs: Mapping[str, np.ndarray], layers: set[str] | None = None
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(outputs, the tensors the instructions wrote), for every layer or those in `layers`.

    Tensors are named `LAYER/INDEX.OP.ROLE` (`-` for an instruction without a layer), in
    program order; a later write to the same bytes does not change an earlier copy.
    """
    names = executor.program.layers
    dumped: dict[str, np.ndarray] = {}

    def keep(index: int, inst: isa.Instruction, written: tuple[np.ndarray, ...]) -> None:
        layer = "-" if inst.layer is None else names[inst.layer]
        if layers is not None and layer not in layers:
            return
        for role, view in zip(inst.written_roles(), written, strict=True):
            dumped[f"{layer}/{index}.{inst.op}.{role}"] = view.copy()

    outputs = executor.run(inputs, observe=keep)
    return outputs, dumped


def _stored_input(desc: isa.IODesc, array: np.ndarray) -> np.ndarray:
    """An input's stored values: given as such, or floats quantized with its scale."""
    t = desc.tensor
    if array.shape != t.shape:
        raise InputError(
            desc.name,
            f"input '{desc.name}' has shape {list(array.shape)}, expected {list(t.shape)}",
        )
    dtype = numpy_dtype(t.dtype)
    if array.dtype.kind == "f" and desc.scale and isa.is_integer(t.dtype):
        lo, hi = isa.dtype_range(t.dtype)
        x = array.astype(np.float32)
        return integer.quantize_reals(x, desc.scale, desc.zero_point, lo, hi).astype(dtype)
    if array.dtype != dtype:
        raise InputError(
            desc.name,
            f"input '{desc.name}' has dtype {array.dtype}, expected {dtype.name}"
            + (" or floats to quantize" if desc.scale else ""),
        )
    return array


def run(program: isa.Program, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One-shot `Executor(program).run(inputs)`."""
    return Executor(program).run(inputs)
