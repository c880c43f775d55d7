"""Input shapes from data: a model's dynamic dimensions fixed by the arrays it is given.

`npu-run --input`, the first calibration sample of `npu-compile --calib` and the Python
API's `run` give arrays before the model is imported; an input the model declares with
dynamic dimensions takes its shape from them (an explicit `--input-shape` wins).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from .diagnostics import InputError, NpucError

Dims = list[int | None]  # None: a dynamic dimension


def declared_inputs(path: str | os.PathLike[str]) -> dict[str, Dims]:
    """The graph inputs of an .onnx or .tflite file with their declared dimensions."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".onnx":
        import onnx

        try:
            model = onnx.load(path, load_external_data=False)
        except Exception:  # the importer reports an unreadable model with its own message
            return {}
        constants = {t.name for t in model.graph.initializer}
        return {
            vi.name: [
                d.dim_value if d.dim_value > 0 else None for d in vi.type.tensor_type.shape.dim
            ]
            for vi in model.graph.input
            if vi.name not in constants and vi.type.HasField("tensor_type")
        }
    if suffix == ".tflite":
        from .frontends.tflite_model import decode_all

        try:
            graph = decode_all(path.read_bytes(), str(path))[0]
        except (OSError, NpucError):
            return {}
        result = {}
        for index in graph.inputs:
            t = graph.tensors[index]
            signature = t.signature if t.signature is not None else t.shape
            dims = zip(signature, t.shape, strict=False)
            result[t.name] = [None if s < 0 else d for s, d in dims]
        return result
    return {}


def shapes_from_data(
    path: str | os.PathLike[str],
    arrays: Mapping[str, Sequence[int]],
    explicit: Mapping[str, Sequence[int]] | None,
    source: str,
) -> tuple[dict[str, list[int]], list[str]]:
    """`explicit` plus the shapes of dynamic inputs taken from `arrays`, and a note for each.

    An array of the input's rank gives the whole shape; one of rank one less is one sample,
    so the batch dimension becomes 1. `source` names where the arrays come from."""
    shapes = {name: list(dims) for name, dims in (explicit or {}).items()}
    notes = []
    for name, dims in declared_inputs(path).items():
        if name in shapes or name not in arrays or all(d is not None for d in dims[1:]):
            continue
        given = [int(d) for d in arrays[name]]
        if len(given) == len(dims) - 1:
            given = [dims[0] or 1, *given]
        fixed_ok = all(d is None or d == g for d, g in zip(dims, given, strict=False))
        if len(given) != len(dims) or not fixed_ok:
            declared = "x".join("?" if d is None else str(d) for d in dims)
            raise InputError(
                name,
                f"input '{name}' is declared {declared}, but {source} has shape "
                f"{'x'.join(map(str, arrays[name]))}",
            )
        shapes[name] = given
        notes.append(f"note: input '{name}': shape {'x'.join(map(str, given))} from {source}")
    return shapes, notes


def calibration_shapes(folder: str | os.PathLike[str], names: Sequence[str]) -> dict[str, tuple]:
    """Array shapes of the first .npy/.npz sample in a calibration folder, by input name
    (a .npy file feeds the first input)."""
    import numpy as np

    folder = Path(folder)
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in (".npy", ".npz"))
    if not files or not names:
        return {}
    from .input_files import ARRAY_FILE_ERRORS, array_file_error

    try:
        data = np.load(files[0], mmap_mode="r")
        if isinstance(data, np.ndarray):  # a .npy file
            return {names[0]: data.shape}
        with data:
            return {k: data[k].shape for k in data.files if k in names}
    except ARRAY_FILE_ERRORS as e:
        message = f"cannot read calibration sample: {array_file_error(e)}"
        raise NpucError(message, str(files[0])) from None
