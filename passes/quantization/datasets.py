"""Calibration data: batches of model inputs read from a folder, or seeded random samples.

A *sample* is one element of the model's batch: an input of shape (N, C, H, W)
takes samples of shape (C, H, W). A data set yields *batches*: dicts mapping
each input name to an array of `batch_size` samples stacked on the first axis,
where `batch_size` is a multiple of the model's batch N (default N). With N = 1
a batch of 8 is run as 8 separate model calls but counts as one batch for the
per-batch statistics (moving average, mean of per-batch ranges). A trailing
remainder of fewer than N samples is dropped.
"""

from __future__ import annotations

import math
import os
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType

from npuc.diagnostics import NpucError
from npuc.graph_io import entry_function, input_names
from npuc.input_files import ARRAY_FILE_ERRORS, array_file_error
from npuc.tensors import numpy_dtype

from .state import state_arguments

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".pgm")
ARRAY_SUFFIXES = (".npy", ".npz")

Batch = dict[str, np.ndarray]


@dataclass(frozen=True)
class InputSpec:
    """One entry-function input: its name, full shape (batch first) and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def batch(self) -> int:
        return self.shape[0]

    @property
    def sample_shape(self) -> tuple[int, ...]:
        return self.shape[1:]


def model_inputs(module: ModuleOp) -> list[InputSpec]:
    """The entry function's data inputs (not state); each a tensor with a batch dimension."""
    try:
        func = entry_function(module)
    except NpucError:  # ModelStructureError: a user error as it is
        raise
    except ValueError as e:
        raise NpucError(str(e)) from e
    state = state_arguments(func)  # fed by the previous call, not by the data set
    specs = []
    for index, (name, arg) in enumerate(zip(input_names(func), func.body.block.args, strict=True)):
        if index in state:
            continue
        ty = arg.type
        if not isinstance(ty, TensorType) or not ty.get_shape():
            raise NpucError(f"input '{name}' must be a tensor with a batch dimension to calibrate")
        specs.append(InputSpec(name, tuple(ty.get_shape()), numpy_dtype(ty.get_element_type())))
    if not specs:
        raise NpucError("the model has no inputs to calibrate with")
    return specs


@dataclass(frozen=True)
class Preprocessing:
    """How decoded images become input values.

    Pixels (0..255, RGB order, or BGR with `reverse_channels`) become
    `(pixel - mean) * scale` per channel; `mean` and `scale` are one number or one
    per channel, in the channel order fed to the model. Arrays (.npy/.npz) are fed
    as they are.
    """

    mean: float | Sequence[float] = 0.0
    scale: float | Sequence[float] = 1.0
    reverse_channels: bool = False

    def __post_init__(self) -> None:
        mean, scale = (np.atleast_1d(np.asarray(v, np.float64)) for v in (self.mean, self.scale))
        if not np.all(np.isfinite(mean)):
            raise NpucError(f"preprocessing mean must be finite, got {self.mean}")
        if not np.all(np.isfinite(scale)) or np.any(scale == 0):
            raise NpucError(f"preprocessing scale must be finite and non-zero, got {self.scale}")

    @property
    def is_identity(self) -> bool:
        return self == Preprocessing()

    def per_channel(self, channels: int) -> tuple[np.ndarray, np.ndarray]:
        values = []
        for label, value in (("mean", self.mean), ("scale", self.scale)):
            array = np.atleast_1d(np.asarray(value, np.float32))
            if array.ndim != 1 or array.size not in (1, channels):
                raise NpucError(
                    f"preprocessing {label} needs 1 or {channels} values, got {array.size}"
                )
            values.append(np.broadcast_to(array, (channels,)))
        return values[0], values[1]


class CalibrationDataset:
    """An iterable of calibration batches with a known length (number of batches)."""

    def __init__(self, module: ModuleOp, batch_size: int | None, sample_count: int):
        self.inputs = model_inputs(module)
        batches = {spec.batch for spec in self.inputs}
        if len(batches) != 1:
            raise NpucError("calibration needs all model inputs to share one batch dimension")
        self.model_batch = batches.pop()
        self.batch_size = self.model_batch if batch_size is None else batch_size
        if (
            not isinstance(self.batch_size, int)
            or self.batch_size < 1
            or self.batch_size % self.model_batch
        ):
            raise NpucError(
                f"batch size must be a positive multiple of the model's batch "
                f"{self.model_batch}, got {self.batch_size}"
            )
        self.sample_count = sample_count
        self.used_samples = sample_count - sample_count % self.model_batch
        if not self.used_samples:
            raise NpucError(
                f"the data set has {sample_count} sample(s), fewer than the model's batch "
                f"{self.model_batch}"
            )

    def __len__(self) -> int:
        return math.ceil(self.used_samples / self.batch_size)

    def _chunks(self) -> Iterator[Batch]:
        """Groups of samples (each array (k, *sample_shape)), in order."""
        raise NotImplementedError

    def __iter__(self) -> Iterator[Batch]:
        pending: list[Batch] = []
        held = used = 0
        for chunk in self._chunks():
            pending.append(chunk)
            held += len(next(iter(chunk.values())))
            while held >= self.batch_size:
                batch, pending = _take(pending, self.batch_size)
                held -= self.batch_size
                used += self.batch_size
                yield batch
        rest = min(held, self.used_samples - used)
        if rest > 0:
            yield _take(pending, rest)[0]


def _take(chunks: list[Batch], count: int) -> tuple[Batch, list[Batch]]:
    """The first `count` samples of `chunks` as one batch, and the chunks left over."""
    names = list(chunks[0])
    joined = {n: np.concatenate([c[n] for c in chunks]) for n in names}
    batch = {n: a[:count] for n, a in joined.items()}
    rest = {n: a[count:] for n, a in joined.items()}
    return batch, ([rest] if len(next(iter(rest.values()))) else [])


class RandomDataset(CalibrationDataset):
    """`count` seeded random samples; sample i is drawn from `np.random.default_rng((seed, i))`,
    so it does not depend on the batch size.

    Float inputs are standard normal, bool inputs 0 or 1, and integer inputs uniform over
    [0, 255] (within the type's range): byte-like data, as token and byte inputs hold.
    """

    def __init__(
        self, module: ModuleOp, count: int, seed: int = 0, *, batch_size: int | None = None
    ):
        if not isinstance(count, int) or count < 1:
            raise NpucError(f"the number of random samples must be positive, got {count}")
        super().__init__(module, batch_size, count)
        self.seed = seed

    def _chunks(self) -> Iterator[Batch]:
        for i in range(self.used_samples):
            rng = np.random.default_rng((self.seed, i))
            chunk = {}
            for spec in self.inputs:
                shape = (1, *spec.sample_shape)
                chunk[spec.name] = random_sample(rng, shape, spec.dtype)
            yield chunk


def random_sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Random data for one input of `dtype` (see RandomDataset)."""
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(dtype)
    high = min(255, int(np.iinfo(dtype).max))
    return rng.integers(0, high, shape, endpoint=True).astype(dtype)


def random_dataset(
    module: ModuleOp, count: int, seed: int = 0, *, batch_size: int | None = None
) -> RandomDataset:
    """`count` seeded random samples, for smoke tests."""
    return RandomDataset(module, count, seed, batch_size=batch_size)


class FolderDataset(CalibrationDataset):
    """The samples stored in a folder, one file each, in file-name order.

    `.npy`: one array, for single-input models, shaped like the input or like one
    sample (the input without its batch dimension). `.npz`: arrays keyed by input
    name (or a single array for a single-input model), shaped the same way.
    Images (.png, .jpg, .jpeg, .bmp, .ppm, .pgm), for a single rank-4 input with 1
    or 3 channels (NCHW, or NHWC when dim 1 is not 1 or 3): decoded with Pillow,
    resized to the input's height and width (bilinear) and preprocessed. Other
    files are ignored. A file shaped like the whole input of a model with batch
    N > 1 holds N samples. `limit` uses only the first `limit` files.
    """

    def __init__(
        self,
        module: ModuleOp,
        folder: str | os.PathLike[str],
        *,
        batch_size: int | None = None,
        preprocessing: Preprocessing | None = None,
        limit: int | None = None,
    ):
        self.folder = Path(folder)
        self.preprocessing = preprocessing or Preprocessing()
        specs = model_inputs(module)
        self.files = _listing(self.folder, limit)
        self._layout: tuple[int, int, int, bool] | None = None
        counts = [self._sample_count(path, specs) for path in self.files]
        if self._layout is None and not self.preprocessing.is_identity:
            raise NpucError(
                "mean, scale and channel reversal apply to images; this folder holds arrays "
                "(.npy/.npz), which are fed as they are",
                str(self.folder),
            )
        if self._layout is not None:
            self.preprocessing.per_channel(self._layout[0])  # the value counts, before calibrating
        super().__init__(module, batch_size, sum(counts))

    def _chunks(self) -> Iterator[Batch]:
        for path in self.files:
            yield self._read(path)

    # ------------------------------------------------------------------ per file

    def _sample_count(self, path: Path, specs: list[InputSpec]) -> int:
        """How many samples `path` holds, from its header only (also validating it)."""
        suffix = path.suffix.lower()
        if suffix in IMAGE_SUFFIXES:
            self._image_layout(path, specs)
            _open_image(path).close()
            return 1
        shapes = _array_shapes(path, [s.name for s in specs])
        counts = {s.name: _samples_in(path, shapes[s.name], s) for s in specs}
        if len(set(counts.values())) != 1:
            raise NpucError("the arrays hold different numbers of samples", str(path))
        return next(iter(counts.values()))

    def _read(self, path: Path) -> Batch:
        if path.suffix.lower() in IMAGE_SUFFIXES:
            return {self.inputs[0].name: self._read_image(path)}
        names = [s.name for s in self.inputs]
        arrays = _load_arrays(path, names)
        chunk = {}
        for spec in self.inputs:
            array = arrays[spec.name]
            count = _samples_in(path, array.shape, spec)
            if not np.can_cast(array.dtype, spec.dtype, "same_kind"):
                raise NpucError(
                    f"array for input '{spec.name}' has dtype {array.dtype}, "
                    f"the model expects {spec.dtype}",
                    str(path),
                )
            chunk[spec.name] = array.reshape(count, *spec.sample_shape).astype(spec.dtype)
        return chunk

    def _image_layout(self, path: Path, specs: list[InputSpec]) -> tuple[int, int, int, bool]:
        """(channels, height, width, channels-first) of the single image input."""
        if self._layout is None:
            if len(specs) != 1:
                names = ", ".join(s.name for s in specs)
                raise NpucError(
                    f"images can only feed a single-input model (inputs: {names}); "
                    "use .npz files keyed by input name",
                    str(path),
                )
            shape = specs[0].shape
            if len(shape) == 4 and shape[1] in (1, 3):
                self._layout = (shape[1], shape[2], shape[3], True)
            elif len(shape) == 4 and shape[3] in (1, 3):
                self._layout = (shape[3], shape[1], shape[2], False)
            else:
                raise NpucError(
                    f"images need an input of shape (N, C, H, W) or (N, H, W, C) with "
                    f"C = 1 or 3, but '{specs[0].name}' has shape {shape}",
                    str(path),
                )
        return self._layout

    def _read_image(self, path: Path) -> np.ndarray:
        from PIL import Image

        spec = self.inputs[0]
        channels, height, width, first = self._image_layout(path, self.inputs)
        mean, scale = self.preprocessing.per_channel(channels)
        with _open_image(path) as image:
            try:
                image = image.convert("L" if channels == 1 else "RGB")
                image = image.resize((width, height), Image.Resampling.BILINEAR)
                pixels = np.asarray(image, dtype=np.float32)
            except (OSError, ValueError) as e:
                raise NpucError(f"cannot decode image: {e}", str(path)) from None
        pixels = pixels.reshape(height, width, channels)
        if self.preprocessing.reverse_channels:
            pixels = pixels[:, :, ::-1]
        pixels = (pixels - mean) * scale
        if first:
            pixels = pixels.transpose(2, 0, 1)
        return pixels[None].astype(spec.dtype)


def folder_dataset(
    module: ModuleOp,
    folder: str | os.PathLike[str],
    *,
    batch_size: int | None = None,
    preprocessing: Preprocessing | None = None,
    limit: int | None = None,
) -> FolderDataset:
    """The samples in `folder` (see `FolderDataset`)."""
    return FolderDataset(
        module, folder, batch_size=batch_size, preprocessing=preprocessing, limit=limit
    )


def _listing(folder: Path, limit: int | None) -> list[Path]:
    if not folder.is_dir():
        raise NpucError("not a folder" if folder.exists() else "no such folder", str(folder))
    suffixes = IMAGE_SUFFIXES + ARRAY_SUFFIXES
    files = sorted(
        (p for p in folder.iterdir() if p.suffix.lower() in suffixes and p.is_file()),
        key=lambda p: p.name,
    )
    if not files:
        raise NpucError(
            f"no calibration samples in the folder (expected {', '.join(suffixes)} files)",
            str(folder),
        )
    if limit is not None:
        if limit < 1:
            raise NpucError(f"the sample limit must be positive, got {limit}")
        files = files[:limit]
    return files


def _samples_in(path: Path, shape: tuple[int, ...], spec: InputSpec) -> int:
    """1 for an array shaped like one sample, N for one shaped like the whole input."""
    if tuple(shape) == spec.sample_shape:
        return 1
    if tuple(shape) == spec.shape:
        return spec.batch
    raise NpucError(
        f"array for input '{spec.name}' has shape {tuple(shape)}, expected {spec.shape} "
        f"or {spec.sample_shape}",
        str(path),
    )


def _pick(path: Path, keys: list[str], names: list[str]) -> dict[str, str]:
    """Input name -> the .npz key that holds it."""
    if len(names) == 1 and len(keys) == 1:
        return {names[0]: keys[0]}
    missing = [n for n in names if n not in keys]
    if missing:
        raise NpucError(
            f"no array for input(s) {', '.join(missing)} (the file holds "
            f"{', '.join(keys) or 'no arrays'})",
            str(path),
        )
    return {n: n for n in names}


def _header_shape(f: Any, path: Path) -> tuple[int, ...]:
    """The shape in the .npy header at the start of `f`, refusing pickled object arrays."""
    try:
        version = np.lib.format.read_magic(f)
    except ValueError:
        raise NpucError("not a .npy array (bad magic string)", str(path)) from None
    read = (
        np.lib.format.read_array_header_1_0
        if version == (1, 0)
        else np.lib.format.read_array_header_2_0
    )
    shape, _, dtype = read(f)
    if dtype.hasobject:
        raise NpucError("the array holds Python objects, which are not loaded", str(path))
    return tuple(shape)


def _array_shapes(path: Path, names: list[str]) -> dict[str, tuple[int, ...]]:
    """The shapes of the arrays of a .npy/.npz file for each input, reading headers only."""
    try:
        if path.suffix.lower() == ".npy":
            if len(names) != 1:
                raise NpucError(
                    f"a .npy file holds one array but the model has inputs {', '.join(names)}; "
                    "use .npz files keyed by input name",
                    str(path),
                )
            with open(path, "rb") as f:
                return {names[0]: _header_shape(f, path)}
        with zipfile.ZipFile(path) as archive:
            members = {m.removesuffix(".npy"): m for m in archive.namelist() if m.endswith(".npy")}
            chosen = _pick(path, list(members), names)
            shapes = {}
            for name, key in chosen.items():
                with archive.open(members[key]) as f:
                    shapes[name] = _header_shape(f, path)
            return shapes
    except NpucError:
        raise
    except ARRAY_FILE_ERRORS as e:
        raise NpucError(f"cannot read array file: {array_file_error(e)}", str(path)) from None


def _load_arrays(path: Path, names: list[str]) -> dict[str, np.ndarray]:
    try:
        if path.suffix.lower() == ".npy":
            return {names[0]: np.load(path, allow_pickle=False)}
        with np.load(path, allow_pickle=False) as archive:
            chosen = _pick(path, list(archive.files), names)
            return {name: archive[key] for name, key in chosen.items()}
    except NpucError:
        raise
    except ARRAY_FILE_ERRORS as e:
        raise NpucError(f"cannot read array file: {array_file_error(e)}", str(path)) from None


def _open_image(path: Path) -> Any:
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:  # pragma: no cover - pillow is a dependency
        raise NpucError("reading images needs Pillow (pip install pillow)", str(path)) from None
    try:
        return Image.open(path)
    except (OSError, UnidentifiedImageError, ValueError) as e:
        raise NpucError(f"cannot read image: {e}", str(path)) from None
