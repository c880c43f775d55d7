"""Resource variables of TFLite models (streaming state) as explicit state on `@main`.

A stateful TFLite model keeps resource variables between invocations: VAR_HANDLE names
a variable, READ_VARIABLE reads it, ASSIGN_VARIABLE replaces it, and CALL_ONCE runs an
initialisation subgraph on the first invocation. npuc keeps the IR functional instead:

* each variable the main subgraph reads or assigns becomes a *state pair* on `@main`:
  an extra argument (its value when the call starts) after the model's inputs and an
  extra result (its value when the call ends) after the model's outputs, both with
  `{nn.name = "<variable>", nn.state = "<variable>"}`. READ_VARIABLE yields the current
  value (the argument, or the last ASSIGN_VARIABLE's value); a variable that is never
  assigned returns its argument unchanged;
* CALL_ONCE's initialisation subgraph is imported and run with the reference
  interpreter at import time (it normally assigns constants), and the initial values
  are stored on `@main` as `nn.state_init = {"<variable>": dense<...>}` (a quantized
  variable holds its stored integers). `graph_io.initial_state` reads them back.

A caller runs a sequence by feeding step k's state results as step k+1's state
arguments, starting from the initial state (`run_sequence`). Subgraphs used by control
flow (IF, WHILE, ...) are not supported and are reported with the other operators.
Calibration and quantization treat such models as streams too
(passes/quantization/state.py).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from xdsl.dialects.builtin import DictionaryAttr, IntegerType, ModuleOp, TensorType
from xdsl.ir import Attribute, SSAValue

from npuc.diagnostics import NpucError
from npuc.graph_io import STATE_INIT_ATTR
from npuc.limits import check_tensor, sequence_of
from npuc.tensors import to_dense

from .tflite_context import CONTROL_FLOW, Importer, OpContext, Unsupported, tensor_type
from .tflite_model import Graph, Operator
from .tflite_schema import tflite

__all__ = ["State", "run_sequence", "signature_subgraphs"]


# --------------------------------------------------------------------------- decoding


def signature_subgraphs(data: bytes) -> list[int]:
    """The distinct subgraphs the model's signatures (entry points) run; [] if unreadable."""
    try:
        model = tflite.Model.GetRootAsModel(data, 0)
        found = [model.SignatureDefs(i).SubgraphIndex() for i in range(model.SignatureDefsLength())]
    except (IndexError, struct.error, ValueError, TypeError, AttributeError, OverflowError):
        return []
    return sorted(set(found))


def subgraph_refs(op: Operator) -> list[int]:
    """The subgraphs a control-flow or CALL_ONCE operator runs."""
    keys = ("InitSubgraphIndex",) if op.op_type == "CALL_ONCE" else CONTROL_FLOW.get(op.op_type, ())
    return [int(op.options[k]) for k in keys if k in op.options]


# --------------------------------------------------------------------------- importing


def _variable_name(op: Operator) -> str:
    """TFLite identifies a variable by (container, shared_name) across subgraphs."""
    parts = [op.options.get("Container") or b"", op.options.get("SharedName") or b""]
    texts = [p.decode(errors="replace") if isinstance(p, bytes) else str(p) for p in parts]
    return "/".join(t for t in texts if t) or f"variable_{op.index}"


class State:
    """The variables of one subgraph while it is imported: their types and current values."""

    def __init__(self, importer: Importer, graphs: Sequence[Graph], visiting: frozenset[int]):
        self.importer = importer
        self.graphs = graphs
        self.visiting = visiting  # subgraphs being imported: CALL_ONCE cycles are errors
        graph = importer.graph
        self.handles: dict[int, str] = {}  # resource tensor -> variable
        self.types: dict[str, TensorType] = {}  # in order of first use
        self.current: dict[str, SSAValue] = {}
        self.args: dict[str, SSAValue] = {}
        self.init: dict[str, np.ndarray] = {}
        for op in graph.operators:
            if op.op_type == "VAR_HANDLE" and op.outputs:
                self.handles[op.outputs[0]] = _variable_name(op)
        for op in graph.operators:
            pair = {
                "READ_VARIABLE": (op.inputs[:1], op.outputs[:1]),
                "ASSIGN_VARIABLE": (op.inputs[:1], op.inputs[1:2]),
            }.get(op.op_type)
            if pair is None or not pair[0] or not pair[1] or pair[0][0] not in self.handles:
                continue
            name, tensor = self.handles[pair[0][0]], graph.tensors[pair[1][0]]
            try:
                ty = tensor_type(tensor)
            except Unsupported as e:
                importer.issues.append((op.op_type, name, str(e)))
                continue
            if self.types.setdefault(name, ty) != ty:
                importer.issues.append(
                    (op.op_type, name, f"variable used as {self.types[name]} and as {ty}")
                )

    @property
    def names(self) -> list[str]:
        return list(self.types)

    def bind(self, args: Sequence[SSAValue]) -> None:
        for name, arg in zip(self.types, args, strict=True):
            self.args[name] = self.current[name] = arg

    def results(self) -> list[SSAValue]:
        return [self.current[n] for n in self.types]

    def assigned(self) -> list[str]:
        return [n for n in self.types if self.current[n] is not self.args[n]]

    def roots(self) -> list[Operator]:
        """Operators that must run though no output needs them (their effect is the state)."""
        return [op for op in self.importer.graph.operators if op.op_type == "ASSIGN_VARIABLE"]

    def init_attr(self) -> dict[str, Attribute]:
        """`nn.state_init` for the function's attributes, if any variable is initialised."""
        values: dict[str, Attribute] = {}
        for name, ty in self.types.items():
            if name not in self.init:
                continue
            array = np.asarray(self.init[name])
            element = ty.element_type
            if hasattr(element, "storage_dtype"):  # quantized: keep the stored integers
                storage = element.storage_bits.data  # type: ignore[attr-defined]
                values[name] = to_dense(array, IntegerType(max(8, storage)))
            else:
                values[name] = to_dense(array.astype(_dtype(ty)), element)
        return {STATE_INIT_ATTR: DictionaryAttr(values)} if values else {}

    # ------------------------------------------------------------------ operators

    def convert(self, ctx: OpContext) -> None:
        """Import one state operator; raises Unsupported (the importer reports it)."""
        op = ctx.op
        if op.op_type == "VAR_HANDLE":
            return  # the handle is only a name; READ/ASSIGN look it up
        if op.op_type == "CALL_ONCE":
            self._call_once(op)
            return
        handle = op.inputs[0] if op.inputs else -1
        name = self.handles.get(handle)
        if name is None or name not in self.types:
            raise Unsupported("the resource is not made by a VAR_HANDLE of this subgraph")
        if op.op_type == "READ_VARIABLE":
            self.importer._bind(ctx.out(), self.current[name])
        else:  # ASSIGN_VARIABLE
            value = ctx.value(1)
            if value.type != self.types[name]:
                raise Unsupported(f"assigns {value.type} to variable of type {self.types[name]}")
            self.current[name] = value

    def _call_once(self, op: Operator) -> None:
        refs = subgraph_refs(op)
        if len(refs) != 1 or not 0 < refs[0] < len(self.graphs) or refs[0] in self.visiting:
            raise Unsupported(f"invalid initialisation subgraph index {refs}")
        values = evaluate_init(self.importer, self.graphs, refs[0], self.visiting)
        # Later CALL_ONCEs do not overwrite: TFLite runs each once, in order, on the first call.
        for name, array in values.items():
            self.init.setdefault(name, array)


def _dtype(ty: TensorType) -> np.dtype:
    from npuc.tensors import numpy_dtype

    return numpy_dtype(ty.element_type)


def evaluate_init(
    parent: Importer, graphs: Sequence[Graph], index: int, visiting: frozenset[int]
) -> dict[str, np.ndarray]:
    """The variables an initialisation subgraph assigns, computed with the interpreter; the
    subgraph is imported by an importer of the same kind as `parent`."""
    from npuc.graph_io import initial_state
    from npuc.runtime.qnn_interpreter import run_module

    graph = graphs[index]
    if graph.inputs:
        raise Unsupported(f"initialisation subgraph {index} takes inputs")
    importer = type(parent)(graph, parent.location, graphs=graphs, visiting=visiting | {index})
    try:
        module = importer.run({}, None, None)
    except NpucError as e:
        raise Unsupported(f"initialisation subgraph {index}: {e.message}") from None
    state = importer.state
    assert state is not None
    if any(state.args[n].uses for n in state.names):
        raise Unsupported(f"initialisation subgraph {index} reads a variable")
    outputs = run_module(module, initial_state(module))
    return {n: outputs[n] for n in state.assigned()}


# --------------------------------------------------------------------------- running


def run_sequence(
    module: ModuleOp,
    steps: Sequence[Mapping[str, np.ndarray]],
    *,
    state: Mapping[str, np.ndarray] | None = None,
    run: Callable[..., dict[str, np.ndarray]] | None = None,
) -> tuple[list[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """Run `@main` once per step's inputs, carrying the state; per-step outputs, final state.

    The state starts at `state`, else the module's initial state. Outputs leave out the
    state results. `run` defaults to the qnn reference interpreter's `run_module`.
    """
    from npuc.graph_io import entry_function, initial_state, state_names
    from npuc.runtime.qnn_interpreter import run_module

    run = run or run_module
    func = entry_function(module)
    pairs = state_names(func)
    current = dict(initial_state(module) if state is None else state)
    results = []
    for feeds in steps:
        outputs = run(module, {**feeds, **current})
        current = {name: outputs.pop(name) for _, _, name in pairs}
        results.append(outputs)
    return results, current


def sequence_feeds(
    module: ModuleOp, given: Mapping[str, np.ndarray], steps: int, seed: int = 0
) -> tuple[list[dict[str, np.ndarray]], list[str]]:
    """Per-step inputs for `steps` calls, and the names of the inputs that were generated.

    A given array has a leading sequence axis of length `steps`; missing inputs get seeded
    random data, different at each step. State arguments are left to `run_sequence`.
    """
    from npuc.graph_io import entry_function, state_names
    from npuc.runtime.qnn_interpreter import random_inputs

    if steps < 1:
        raise NpucError(f"--sequence must be at least 1, not {steps}")
    state = {name for _, _, name in state_names(entry_function(module))}
    for name, array in given.items():
        if array.ndim < 1 or array.shape[0] != steps:
            raise NpucError(
                f"input '{name}' has shape {tuple(array.shape)}; with --sequence "
                f"{steps} it needs a leading axis of length {steps}"
            )
    feeds = []
    generated: list[str] = []
    for k in range(steps):
        random = random_inputs(module, skip={*given, *state}, seed=seed + k)
        if k == 0:  # the steps' inputs are all kept: refuse a sequence too large up front
            for name, array in random.items():
                check_tensor((steps, *array.shape), array.itemsize, sequence_of(name, steps))
        generated = list(random)
        feeds.append({**{n: a[k] for n, a in given.items()}, **random})
    return feeds, generated
